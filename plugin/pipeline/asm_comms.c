/* asm_comms.c: the assembler's cache of communicator facts (asm_state.h comm_of asks it on a
 * miss): a copy of the registry's facts and the label drawing shows. Never calls the rest of
 * the assembler. */
#include "plugin/pipeline/asm_state.h"
#include "common/grow.h"
#include <stdio.h>

comm_cache *cl_asm_comm_load(cl_asm *a, uint32_t serial) {
  if (!serial) return NULL;
  a->memo_serial = 0;                  /* the table may move */
  a->memo_cc = NULL;
  if (cl_grow(&a->comms, &a->ncomms, serial, sizeof *a->comms, 16, 0) != 0) return NULL;
  comm_cache *c = &a->comms[serial - 1];
  if (!c->loaded || !c->info.d.hash) {
    if (a->deps.comm_lookup(serial, &c->info) != 0) return NULL;
    c->loaded = 1;
    cl_comm_facts *f = &c->f;
    if (c->info.d.name[0]) snprintf(f->label, sizeof f->label, "comm %s", c->info.d.name);
    else if (c->info.d.hash) snprintf(f->label, sizeof f->label, "comm %08llx", (unsigned long long)(c->info.d.hash >> 32));
    else snprintf(f->label, sizeof f->label, "comm #%u", serial);
    f->hash = c->info.d.hash;
    snprintf(f->name, sizeof f->name, "%s", c->info.d.name);
    f->rank = c->info.d.rank;
    f->nranks = c->info.d.nranks;
  }
  return c;
}
