/* names.h: display names of event types and states, and the decoding of NetPlugin data
 * (IB and socket v1 descriptors) into trace args. */
#ifndef COMMLENS_NAMES_H
#define COMMLENS_NAMES_H
#include "commlens/event.h"
#include "exporters/strbuf.h"
const char *cl_event_name(unsigned etype);
const char *cl_state_name(unsigned state);
void cl_net_args(cl_sb *b, int *first, const cl_net_plugin *n);
#endif
