/* event.h: commlens' one internal event model. The ABI shims (plugin/abi/) translate every
 * NCCL profiler version into these types; nothing outside plugin/abi/ knows ABI versions.
 * The records below travel through the per-thread rings and the spill file unchanged, so
 * they are plain fixed-layout data: no pointers that outlive the process except the static
 * NCCL strings, which the writer interns before they leave the process. */
#ifndef COMMLENS_EVENT_H
#define COMMLENS_EVENT_H

#include <stdint.h>

/* Event types; the value is the bit position of the type in NCCL's activation mask. */
typedef enum {
  CL_EV_GROUP = 0, CL_EV_COLL = 1, CL_EV_P2P = 2, CL_EV_PROXY_OP = 3, CL_EV_PROXY_STEP = 4,
  CL_EV_PROXY_CTRL = 5, CL_EV_KERNEL_CH = 6, CL_EV_NET_PLUGIN = 7, CL_EV_GROUP_API = 8,
  CL_EV_COLL_API = 9, CL_EV_P2P_API = 10, CL_EV_KERNEL_LAUNCH = 11, CL_EV_CE_COLL = 12,
  CL_EV_CE_SYNC = 13, CL_EV_CE_BATCH = 14, CL_EV_KERNEL_PHASE = 15, CL_EV__COUNT = 16
} cl_event_type;

/* State values are NCCL's own numbering (CLABI_ST_* in nccl_profiler_abi.h).
 * Their display names are cl_state_name() (plugin/output/names.c). */
enum {
  CL_ST_STEP_SEND_GPU_WAIT = 8, CL_ST_STEP_SEND_WAIT = 9, CL_ST_STEP_RECV_WAIT = 10,
  CL_ST_STEP_RECV_FLUSH_WAIT = 11, CL_ST_STEP_RECV_GPU_WAIT = 12, CL_ST_CTRL_IDLE = 13,
  CL_ST_CTRL_ACTIVE = 14, CL_ST_CTRL_SLEEP = 15, CL_ST_CTRL_WAKEUP = 16, CL_ST_CTRL_APPEND = 17,
  CL_ST_CTRL_APPEND_END = 18, CL_ST_PROXY_OP_IN_PROGRESS = 19, CL_ST_STEP_SEND_PEER_WAIT = 20,
  CL_ST_NET_PLUGIN_UPDATE = 21, CL_ST_KERNEL_CH_STOP = 22, CL_ST_GROUP_START_API_STOP = 23,
  CL_ST_GROUP_END_API_START = 24, CL_ST_KERNEL_PHASE_STOP = 31, CL_ST__MAX = 31
};

/* Strings in payloads are NCCL's static strings (func, datatype, algo, proto, syncStrategy)
 * or commlens' own static names (v1 enum decoding); the writer reads them in-process. */
typedef const char *cl_str;

/* Event payloads: what the shim copies out of NCCL's descriptor. Each fits the record's
 * payload area (CL_PAYLOAD_MAX bytes). Counts are as NCCL passed them. user_tag: the
 * application's per-call label (v7 userTag; 0 = untagged, and always 0 before v7). */
typedef struct { int32_t graph_captured, depth; } cl_group_api;
typedef struct { cl_str func, datatype; uint64_t count; uint64_t stream; int32_t root;
                 uint8_t graph_captured; uint64_t user_tag; } cl_coll_api;   /* also P2pApi (root = -1) */
/* stream_id: CUPTI's id of the stream plus one, looked up at the launch (0: unknown) */
typedef struct { uint64_t stream; uint32_t stream_id; } cl_kernel_launch;
/* comm_hash is set only by v1..v3, whose init does not name the communicator. */
typedef struct { uint64_t seq; cl_str func, datatype, algo, proto; uint64_t count;
                 uint64_t parent_group, comm_hash; int32_t root; uint8_t nchannels, nwarps;
                 uint8_t is_collnet, is_nvls; uint64_t user_tag; } cl_coll;
typedef struct { cl_str func, datatype; uint64_t count; uint64_t parent_group, comm_hash;
                 int32_t peer; uint8_t nchannels; uint64_t user_tag; } cl_p2p;
typedef struct { int32_t pid, peer, nsteps, chunk_size; uint8_t channel, is_send; } cl_proxy_op;
typedef struct { int32_t step; } cl_proxy_step;
typedef struct { uint64_t ptimer; uint8_t channel; } cl_kernel_ch;
/* v7 KernelPhase: one phase of a channel's kernel work (phase: CLABI_PHASE_* numbering,
 * 0 initial_sync, 1 compute, 2 final_sync), ptimer its GPU start; its parent is the KernelCh. */
typedef struct { uint64_t ptimer; uint8_t channel, phase; } cl_kernel_phase;
/* NetPlugin: id = NCCL's plugin id (type | version); the IB or socket descriptor is copied. */
typedef struct { int64_t id; uint8_t data_len; uint8_t data[40]; } cl_net_plugin;
/* stream_id as in cl_kernel_launch */
typedef struct { uint64_t seq; cl_str func, datatype, sync_strategy; uint64_t count, stream;
                 int32_t root; uint32_t batch_size, num_batches, ce_seq; uint8_t intra_batch_sync;
                 uint32_t stream_id; uint64_t user_tag; } cl_ce_coll;
typedef struct { int32_t nranks; uint8_t is_complete; } cl_ce_sync;
typedef struct { uint64_t total_bytes; int32_t num_ops; uint8_t use_intra_sync; } cl_ce_batch;

typedef struct {
  int32_t rank;            /* the descriptor's originating rank */
  uint32_t _pad;
  union {
    cl_group_api group_api; cl_coll_api coll_api; cl_kernel_launch kernel_launch; cl_coll coll;
    cl_p2p p2p; cl_proxy_op proxy_op; cl_proxy_step proxy_step; cl_kernel_ch kernel_ch;
    cl_kernel_phase kernel_phase; cl_net_plugin net; cl_ce_coll ce_coll; cl_ce_sync ce_sync; cl_ce_batch ce_batch;
  };
} cl_payload;

/* ---- ring records ----------------------------------------------------------------------- */
/* A record is 1..4 slots of 32 bytes: a header slot, then for START the payload. */
#define CL_SLOT_BYTES 32
/* PAD and MOVED live in rings only (the drain consumes them): MOVED ends a ring whose thread
 * went on in a larger one (plugin/capture/ring.h). */
typedef enum { CL_REC_PAD = 0, CL_REC_START = 1, CL_REC_STOP = 2, CL_REC_STATE = 3, CL_REC_MOVED = 4 } cl_rec_kind;

/* flags of a START record */
enum {
  CL_F_FOREIGN = 1 << 0,   /* context or pid belongs to another process (PXN): parent is opaque */
  CL_F_NO_COMM = 1 << 1,   /* context was NULL or unknown */
};
/* flag of a STOP record: it also carries the event's KernelChStop state, which NCCL records
 * just before stopping a KernelCh (the hot path folds the pair into one record): arg = the
 * state's argument (the channel's stop timer), aux = ns from the state to the stop. */
enum { CL_F_STOP_KCH_STATE = 1 << 2 };
/* flag of a START record: it is a whole KernelCh in two slots, the header (the start's fields)
 * and a cl_kch_tail (the start's payload and the stop's fields; the payload's rank, which nothing
 * reads of a KernelCh, is left out). A KernelCh is held back on its thread until it stops when
 * only a digest is written (plugin/capture/hotpath.c): 64 bytes where a start and a stop took 96. */
enum { CL_F_SPAN = 1 << 3 };
/* flag of a KernelCh's START record: the only channel of its collective recorded (gate.h
 * cl_kch_first), so the collective's GPU span is this channel's; its other channels were not
 * asked for. */
enum { CL_F_KCH_FIRST = 1 << 4 };
/* flag of a Coll or P2p START record: NCCL's snapshot of the activation mask for this operation
 * lacked KernelCh (the timers' sample left it out, plugin/capture/timers.h): no KernelCh event
 * comes for it, so its GPU span is CUPTI's or none, and nothing waits for its channels. */
enum { CL_F_UNTIMED = 1 << 5 };

typedef struct {
  uint8_t kind;      /* cl_rec_kind */
  uint8_t nslots;    /* slots in this record, header included */
  uint8_t etype;     /* START: cl_event_type */
  uint8_t flags;     /* START: CL_F_* */
  uint32_t aux;      /* START: communicator serial (0 = none); STATE: the state value */
  uint64_t id;       /* the event id (the handle NCCL holds) */
  uint64_t ts;       /* CLOCK_MONOTONIC nanoseconds */
  uint64_t arg;      /* START: parentObj as NCCL passed it; STATE: the state's argument */
} cl_rec;

typedef struct { cl_rec hdr; cl_payload p; } cl_start_rec;
/* The second slot of a span (CL_F_SPAN). */
typedef struct {
  uint64_t ptimer;       /* the start's kernel_ch.ptimer */
  uint64_t stop_ts;      /* the stop's ts */
  uint64_t stop_arg;     /* the stop's arg (the folded KernelChStop's timer) */
  uint32_t stop_aux;     /* the stop's aux (ns from that state to the stop) */
  uint8_t channel;       /* the start's kernel_ch.channel */
  uint8_t stop_flags;    /* the stop's flags (CL_F_STOP_KCH_STATE) */
  uint16_t _pad;
} cl_kch_tail;

#define CL_PAYLOAD_MAX (3 * CL_SLOT_BYTES)
_Static_assert(sizeof(cl_rec) == CL_SLOT_BYTES, "record header is one slot");
_Static_assert(sizeof(cl_payload) <= CL_PAYLOAD_MAX, "payload fits three slots");
_Static_assert(sizeof(cl_kch_tail) == CL_SLOT_BYTES, "a span's tail is one slot");

/* Event ids: (thread serial << CL_ID_SEQ_BITS) | per-thread sequence, never 0. The serial is
 * unique per thread for the life of the process, so ids are never reused. */
#define CL_ID_SEQ_BITS 40
#define CL_ID_SERIAL(id) ((uint32_t)((id) >> CL_ID_SEQ_BITS))
#define CL_ID_SEQ(id) ((id) & ((1ull << CL_ID_SEQ_BITS) - 1))
/* Set in the handle of an event whose start was lost (full ring, no ring): its stop and states
 * are not recorded, and a child started under it is lost with it and counted, never drawn
 * without its parent. Thread serials stay below 2^23 (CL_SERIAL_LIMIT), so no real id has it. */
#define CL_ID_DROPPED (1ull << 63)
/* The handle of an event left unrecorded on purpose (gate.h cl_digest_only): NCCL stops it,
 * and its stop and states are ignored as a dropped event's are. */
#define CL_ID_QUIET (CL_ID_DROPPED | 1ull)
/* The handles of a CollApi or P2pApi left unrecorded (gate.h cl_skip_launch_events): quiet as
 * CL_ID_QUIET, and saying whether NCCL's snapshot of the mask for that call had KernelCh, which
 * the Coll or P2p event then reads from its parentObj (thread serial 0: no real id is either). */
#define CL_ID_QUIET_API_TIMED (CL_ID_DROPPED | 2ull)
#define CL_ID_QUIET_API_UNTIMED (CL_ID_DROPPED | 3ull)

#endif
