//go:build rdma

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include "shim.h"

jk_ring *jk_ring_new(int cap) {
	jk_ring *r = calloc(1, sizeof *r);
	if (!r) return NULL;
	r->cap = cap;
	r->ops = calloc(cap, sizeof *r->ops);
	r->wr = calloc(cap, sizeof *r->wr);
	r->sge = calloc(cap, sizeof *r->sge);
	r->wc = calloc(cap, sizeof *r->wc);
	if (!r->ops || !r->wr || !r->sge || !r->wc) {
		jk_ring_free(r);
		return NULL;
	}
	return r;
}

void jk_ring_free(jk_ring *r) {
	if (!r) return;
	free(r->ops);
	free(r->wr);
	free(r->sge);
	free(r->wc);
	free(r);
}

// jk_post chains r->ops[0:n] into one WR list and rings the doorbell once.
// Returns 0 or an errno; r->posted is how many WRs the provider accepted
// (kept in C memory: a Go out-parameter would escape to the heap).
int jk_post(struct ibv_qp *qp, jk_ring *r, int n) {
	r->posted = 0;
	if (n <= 0) return 0;
	if (n > r->cap) return EINVAL;
	for (int i = 0; i < n; i++) {
		jk_op *o = &r->ops[i];
		struct ibv_send_wr *w = &r->wr[i];
		struct ibv_sge *s = &r->sge[i];
		s->addr = o->laddr;
		s->length = o->len;
		s->lkey = o->lkey;
		w->wr_id = o->wr_id;
		w->next = i + 1 < n ? &r->wr[i + 1] : NULL;
		w->sg_list = s;
		w->num_sge = o->len ? 1 : 0;
		w->opcode = o->opcode == JK_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		w->send_flags = ((o->flags & JK_SIGNALED) ? IBV_SEND_SIGNALED : 0) |
		                ((o->flags & JK_INLINE) ? IBV_SEND_INLINE : 0);
		w->wr.rdma.remote_addr = o->raddr;
		w->wr.rdma.rkey = o->rkey;
	}
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(qp, r->wr, &bad);
	if (rc == 0) {
		r->posted = n;
		return 0;
	}
	r->posted = bad ? (int)(bad - r->wr) : 0;
	return rc;
}

// jk_poll reaps up to n completions into r->wc. Returns the count or -1.
int jk_poll(struct ibv_cq *cq, jk_ring *r, int n) {
	if (n > r->cap) n = r->cap;
	return ibv_poll_cq(cq, n, r->wc);
}

// jk_get_event copies the next event and acknowledges it at once, so the
// id can be migrated or destroyed without waiting for Go. -errno on error
// (-EAGAIN: none pending; the channel fd is non-blocking).
int jk_get_event(struct rdma_event_channel *ch, jk_event *out) {
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev)) return -errno;
	memset(out, 0, sizeof *out);
	out->type = ev->event;
	out->status = ev->status;
	out->id = ev->id;
	out->listen_id = ev->listen_id;
	const struct rdma_conn_param *p = &ev->param.conn;
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_REJECTED:
		out->initiator_depth = p->initiator_depth;
		out->responder_resources = p->responder_resources;
		out->flow_control = p->flow_control;
		if (p->private_data && p->private_data_len) {
			out->pdlen = p->private_data_len;
			memcpy(out->pd, p->private_data, p->private_data_len);
		}
		break;
	default:
		break;
	}
	rdma_ack_cm_event(ev);
	return 0;
}

static int jk_sockaddr(const char *ip, int port, struct sockaddr_storage *ss) {
	memset(ss, 0, sizeof *ss);
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, ip, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		return 0;
	}
	if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		return 0;
	}
	return EINVAL;
}

int jk_bind_listen(struct rdma_cm_id *id, const char *ip, int port, int backlog) {
	struct sockaddr_storage ss;
	int rc = jk_sockaddr(ip, port, &ss);
	if (rc) return rc;
	if (rdma_bind_addr(id, (struct sockaddr *)&ss)) return errno;
	if (rdma_listen(id, backlog)) return errno;
	return 0;
}

int jk_resolve_addr(struct rdma_cm_id *id, const char *src, const char *dst, int port, int timeout_ms) {
	struct sockaddr_storage s, d;
	int rc = jk_sockaddr(dst, port, &d);
	if (rc) return rc;
	if (src && *src) {
		if ((rc = jk_sockaddr(src, 0, &s))) return rc;
	}
	if (rdma_resolve_addr(id, src && *src ? (struct sockaddr *)&s : NULL, (struct sockaddr *)&d, timeout_ms))
		return errno;
	return 0;
}

int jk_rd_atom(struct ibv_context *ctx, int *init_depth, int *resp_res) {
	struct ibv_device_attr a;
	int rc = ibv_query_device(ctx, &a);
	if (rc) return rc;
	*init_depth = a.max_qp_init_rd_atom;
	*resp_res = a.max_qp_rd_atom;
	return 0;
}

// jk_qp_attr fills a's RC QP attributes, asking for inline bytes.
static void jk_qp_attr(struct ibv_qp_init_attr *a, struct ibv_cq *scq, struct ibv_cq *rcq, int send_depth, int recv_depth, int inl) {
	memset(a, 0, sizeof *a);
	a->send_cq = scq;
	a->recv_cq = rcq;
	a->qp_type = IBV_QPT_RC;
	a->sq_sig_all = 0;
	a->cap.max_send_wr = send_depth;
	a->cap.max_recv_wr = recv_depth;
	a->cap.max_send_sge = 1;
	a->cap.max_recv_sge = 1;
	a->cap.max_inline_data = inl;
}

// The inline sizes asked for, largest first: the device grants one of them.
static const int jk_inline[] = {256, 128, 64, 0};

// jk_create_qp creates the RC QP on id, asking for the largest inline size
// the device grants among a few; *max_inline is what it granted.
int jk_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, int send_depth, int recv_depth, int *max_inline) {
	int err = 0;
	for (unsigned i = 0; i < sizeof jk_inline / sizeof jk_inline[0]; i++) {
		struct ibv_qp_init_attr a;
		jk_qp_attr(&a, scq, rcq, send_depth, recv_depth, jk_inline[i]);
		if (rdma_create_qp(id, pd, &a) == 0) {
			*max_inline = a.cap.max_inline_data;
			return 0;
		}
		err = errno;
	}
	return err;
}

// jk_conn_param fills the connection parameters of a connect or accept.
static void jk_conn_param(struct rdma_conn_param *p, const void *pd, int pdlen, int init_depth, int resp_res) {
	memset(p, 0, sizeof *p);
	p->private_data = pd;
	p->private_data_len = pdlen;
	p->initiator_depth = init_depth;
	p->responder_resources = resp_res;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

int jk_connect(struct rdma_cm_id *id, const void *pd, int pdlen, int flow, int init_depth, int resp_res) {
	struct rdma_conn_param p;
	jk_conn_param(&p, pd, pdlen, init_depth, resp_res);
	p.flow_control = flow;
	return rdma_connect(id, &p) ? errno : 0;
}

int jk_accept(struct rdma_cm_id *id, const void *pd, int pdlen, int init_depth, int resp_res) {
	struct rdma_conn_param p;
	jk_conn_param(&p, pd, pdlen, init_depth, resp_res);
	return rdma_accept(id, &p) ? errno : 0;
}

// jk_qp_new creates an RC QP on pd, outside rdma_cm, asking for the
// largest inline size the device grants among a few, as jk_create_qp.
struct ibv_qp *jk_qp_new(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, int send_depth, int recv_depth, int *max_inline) {
	for (unsigned i = 0; i < sizeof jk_inline / sizeof jk_inline[0]; i++) {
		struct ibv_qp_init_attr a;
		jk_qp_attr(&a, scq, rcq, send_depth, recv_depth, jk_inline[i]);
		struct ibv_qp *qp = ibv_create_qp(pd, &a);
		if (qp) {
			*max_inline = a.cap.max_inline_data;
			return qp;
		}
	}
	return NULL;
}

// jk_qp_to moves qp to state st with the attributes rdma_cm gives id's
// connection; rd >= 0 overrides the READ credits of RTR (responder) or
// RTS (initiator), as rdma_accept does, and rnr >= 0 RTR's RNR back-off
// (IB encoding; rdma_cm's 0 means 655 ms). 0 or an errno.
static int jk_qp_to(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state st, int rd, int rnr) {
	struct ibv_qp_attr a;
	int mask = 0;
	memset(&a, 0, sizeof a);
	a.qp_state = st;
	if (rdma_init_qp_attr(id, &a, &mask))
		return errno;
	if (rd >= 0 && st == IBV_QPS_RTR)
		a.max_dest_rd_atomic = rd;
	if (rd >= 0 && st == IBV_QPS_RTS)
		a.max_rd_atomic = rd;
	if (rnr >= 0 && st == IBV_QPS_RTR) {
		a.min_rnr_timer = rnr;
		mask |= IBV_QP_MIN_RNR_TIMER;
	}
	return ibv_modify_qp(qp, &a, mask);
}

// jk_qp_init moves a pool's QP to INIT for the request id (receives can
// then be posted). 0 or an errno.
int jk_qp_init(struct rdma_cm_id *id, struct ibv_qp *qp) { return jk_qp_to(id, qp, IBV_QPS_INIT, -1, -1); }

// jk_accept_qp accepts id's request on a QP rdma_cm does not own: RTR
// (with min_rnr, if >= 0), RTS, then rdma_accept naming its number. 0 or
// an errno.
int jk_accept_qp(struct rdma_cm_id *id, struct ibv_qp *qp, const void *pd, int pdlen, int init_depth, int resp_res, int min_rnr) {
	int rc = jk_qp_to(id, qp, IBV_QPS_RTR, resp_res, min_rnr);
	if (rc)
		return rc;
	if ((rc = jk_qp_to(id, qp, IBV_QPS_RTS, init_depth, -1)))
		return rc;
	struct rdma_conn_param p;
	jk_conn_param(&p, pd, pdlen, init_depth, resp_res);
	p.qp_num = qp->qp_num;
	return rdma_accept(id, &p) ? errno : 0;
}

// jk_qp_err moves qp to the error state, flushing its outstanding work
// requests (rdma_disconnect does it only for the QP its id owns).
int jk_qp_err(struct ibv_qp *qp) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_ERR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

const char *jk_dev_name(struct rdma_cm_id *id) {
	return id->verbs ? ibv_get_device_name(id->verbs->device) : "";
}

int jk_src_port(struct rdma_cm_id *id) { return ntohs(rdma_get_src_port(id)); }

int jk_port_num(struct rdma_cm_id *id) { return id->port_num; }

// jk_ring_bell posts one ring: a zero-length SEND_WITH_IMM carrying the
// bell index, signaled (the caller bounds unreaped rings). 0 or an errno.
int jk_ring_bell(struct ibv_qp *qp, uint32_t bell, int inl) {
	struct ibv_send_wr w, *bad = NULL;
	memset(&w, 0, sizeof w);
	w.wr_id = JK_RING_WRID | bell;
	w.opcode = IBV_WR_SEND_WITH_IMM;
	w.imm_data = htonl(bell);
	w.send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0);
	return ibv_post_send(qp, &w, &bad);
}

// jk_bellchan_new makes a non-blocking completion channel on ctx; NULL and
// errno on failure.
jk_bellchan *jk_bellchan_new(struct ibv_context *ctx) {
	jk_bellchan *b = calloc(1, sizeof *b);
	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	b->ch = ibv_create_comp_channel(ctx);
	if (!b->ch) {
		int e = errno;
		free(b);
		errno = e;
		return NULL;
	}
	int fl = fcntl(b->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(b->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		int e = errno;
		ibv_destroy_comp_channel(b->ch);
		free(b);
		errno = e;
		return NULL;
	}
	return b;
}

void jk_bellchan_free(jk_bellchan *b) {
	if (!b) return;
	ibv_destroy_comp_channel(b->ch);
	free(b);
}

int jk_bellchan_fd(jk_bellchan *b) { return b->ch->fd; }

// jk_bell_cq creates a receive CQ on b's channel, armed; NULL and errno on
// failure.
struct ibv_cq *jk_bell_cq(struct ibv_context *ctx, jk_bellchan *b, int cqe) {
	struct ibv_cq *cq = ibv_create_cq(ctx, cqe, NULL, b->ch, 0);
	if (!cq) return NULL;
	int rc = ibv_req_notify_cq(cq, 0);
	if (rc) {
		ibv_destroy_cq(cq);
		errno = rc;
		return NULL;
	}
	return cq;
}

static int jk_post_recvs(jk_bellchan *b, struct ibv_qp *qp, int n) {
	struct ibv_recv_wr one[1], *w = b ? b->rwr : one, *bad = NULL;
	if (!b && n > 1) n = 1;
	if (n <= 0) return 0;
	for (int i = 0; i < n; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].next = i + 1 < n ? &w[i + 1] : NULL; // zero-length receives
	}
	return ibv_post_recv(qp, w, &bad);
}

// jk_bell_attach makes qp the receive CQ's context (the drain re-posts on
// it) and posts nrecv zero-length receives. 0 or an errno.
int jk_bell_attach(struct ibv_cq *rcq, struct ibv_qp *qp, int nrecv) {
	rcq->cq_context = qp;
	for (int i = 0; i < nrecv; i++) {
		int rc = jk_post_recvs(NULL, qp, 1);
		if (rc) return rc;
	}
	return 0;
}

// jk_bell_drain handles up to max_events CQ events of b's channel: acks
// and re-arms each CQ, reaps it, re-posts one receive per successful
// completion and records the immediates (bells) in b->rung. Returns 0 once
// the channel is empty (EAGAIN), 1 if events may remain, -errno on error.
int jk_bell_drain(jk_bellchan *b, int max_events) {
	memset(b->rung, 0, sizeof b->rung);
	for (int e = 0; e < max_events; e++) {
		struct ibv_cq *cq;
		void *ctx;
		if (ibv_get_cq_event(b->ch, &cq, &ctx)) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
			return -errno;
		}
		ibv_ack_cq_events(cq, 1);
		// Re-arm before reaping: a completion after the poll raises a
		// new event.
		ibv_req_notify_cq(cq, 0);
		struct ibv_qp *qp = ctx;
		for (;;) {
			int n = ibv_poll_cq(cq, JK_BELL_WC, b->wc);
			if (n <= 0) break;
			int ok = 0;
			for (int i = 0; i < n; i++) {
				struct ibv_wc *wc = &b->wc[i];
				if (wc->status != IBV_WC_SUCCESS) continue; // QP failed: receives flushed
				ok++;
				if (wc->opcode == IBV_WC_RECV && (wc->wc_flags & IBV_WC_WITH_IMM)) {
					b->recvd++;
					uint32_t bell = ntohl(wc->imm_data);
					if (bell < JK_BELL_BITS) b->rung[bell / 64] |= 1ULL << (bell % 64);
				}
			}
			if (qp && ok) jk_post_recvs(b, qp, ok);
			if (n < JK_BELL_WC) break;
		}
	}
	return 1;
}

// jk_set_min_rnr sets how long a sender backs off after an RNR NAK
// (IB encoding), on an RTS QP. 0 or an errno.
int jk_set_min_rnr(struct ibv_qp *qp, int timer) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.min_rnr_timer = timer;
	return ibv_modify_qp(qp, &a, IBV_QP_MIN_RNR_TIMER);
}
