"""one_gpu.py: lets the PyTorch examples run several ranks on a machine with one GPU. Every rank
takes GPU 0 as its own emulated node (NCCL_HOSTID), so NCCL never sees a duplicate GPU and talks
over sockets. Call before the process group is made (NCCL reads these at communicator init)."""
import os


def share_gpu0(local_rank):
    """Sets this rank's NCCL environment; returns the CUDA device index to use (0)."""
    os.environ.update(NCCL_HOSTID="host%d" % local_rank, NCCL_P2P_DISABLE="1",
                      NCCL_SHM_DISABLE="1", NCCL_NET="Socket", NCCL_IB_DISABLE="1",
                      NCCL_MNNVL_ENABLE="0",
                      NCCL_SOCKET_IFNAME=os.environ.get("NCCL_SOCKET_IFNAME", "lo"))
    return 0
