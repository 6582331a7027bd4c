//go:build rdma

// C side of the verbs provider. The verbs fast path (ibv_post_send,
// ibv_poll_cq) is static inline, so Go cannot call it directly; these shims
// take scalars and C-allocated arrays that Go fills, and never keep a Go
// pointer. One cgo call per Post batch and per Poll.
#ifndef JAKIRO_VERBS_SHIM_H
#define JAKIRO_VERBS_SHIM_H

#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

enum { JK_READ = 1, JK_WRITE = 2 };
enum { JK_SIGNALED = 1, JK_INLINE = 2 };

// One fabric op as Go writes it into C memory.
typedef struct {
	uint64_t laddr;
	uint64_t raddr;
	uint64_t wr_id;
	uint32_t len;
	uint32_t lkey;
	uint32_t rkey;
	uint8_t opcode;
	uint8_t flags;
	uint16_t pad;
} jk_op;

// Per-connection C arrays, allocated once: ops (Go fills), and the WR,
// SGE and WC arrays the shims use.
typedef struct {
	int cap;
	int posted; // set by jk_post: WRs the provider accepted
	jk_op *ops;
	struct ibv_send_wr *wr;
	struct ibv_sge *sge;
	struct ibv_wc *wc;
} jk_ring;

// A copied, already acknowledged rdma_cm event.
typedef struct {
	int type;
	int status;
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	uint8_t initiator_depth;
	uint8_t responder_resources;
	uint8_t flow_control;
	uint8_t pdlen;
	uint8_t pd[256];
} jk_event;

jk_ring *jk_ring_new(int cap);
void jk_ring_free(jk_ring *r);
int jk_post(struct ibv_qp *qp, jk_ring *r, int n);
int jk_poll(struct ibv_cq *cq, jk_ring *r, int n);
int jk_get_event(struct rdma_event_channel *ch, jk_event *out);
int jk_bind_listen(struct rdma_cm_id *id, const char *ip, int port, int backlog);
int jk_resolve_addr(struct rdma_cm_id *id, const char *src, const char *dst, int port, int timeout_ms);
int jk_rd_atom(struct ibv_context *ctx, int *init_depth, int *resp_res);
int jk_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, int send_depth, int recv_depth, int *max_inline);
int jk_connect(struct rdma_cm_id *id, const void *pd, int pdlen, int flow, int init_depth, int resp_res);
int jk_accept(struct rdma_cm_id *id, const void *pd, int pdlen, int init_depth, int resp_res);

// A QP made before any connect request (a listener's pool): no rdma_cm id
// owns it, so its states are driven here, with the attributes rdma_cm
// computes for the request's id, as rdma_accept does for the QPs it owns.
struct ibv_qp *jk_qp_new(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, int send_depth, int recv_depth, int *max_inline);
int jk_qp_init(struct rdma_cm_id *id, struct ibv_qp *qp);
int jk_accept_qp(struct rdma_cm_id *id, struct ibv_qp *qp, const void *pd, int pdlen, int init_depth, int resp_res, int min_rnr);
int jk_qp_err(struct ibv_qp *qp);
const char *jk_dev_name(struct rdma_cm_id *id);
int jk_src_port(struct rdma_cm_id *id);
int jk_port_num(struct rdma_cm_id *id);

// Doorbells. A ring is a zero-length SEND_WITH_IMM whose immediate is the
// bell index, signaled, with wr_id JK_RING_WRID | bell (Poll skips those).
#define JK_RING_WRID (1ULL << 63)
enum { JK_BELL_WC = 32, JK_BELL_BITS = 256 };

// A listener's completion channel on one device, with the C arrays its
// drain uses. rung is the bitmap of bells the last drain saw rung; recvd
// counts every ring received since the channel was made.
typedef struct {
	struct ibv_comp_channel *ch;
	uint64_t rung[JK_BELL_BITS / 64];
	uint64_t recvd;
	struct ibv_wc wc[JK_BELL_WC];
	struct ibv_recv_wr rwr[JK_BELL_WC];
} jk_bellchan;

int jk_ring_bell(struct ibv_qp *qp, uint32_t bell, int inl);
jk_bellchan *jk_bellchan_new(struct ibv_context *ctx);
void jk_bellchan_free(jk_bellchan *b);
int jk_bellchan_fd(jk_bellchan *b);
struct ibv_cq *jk_bell_cq(struct ibv_context *ctx, jk_bellchan *b, int cqe);
int jk_bell_attach(struct ibv_cq *rcq, struct ibv_qp *qp, int nrecv);
int jk_bell_drain(jk_bellchan *b, int max_events);
int jk_set_min_rnr(struct ibv_qp *qp, int timer);

#endif
