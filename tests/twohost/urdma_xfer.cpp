// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// urdma_xfer: a byte-exact RC transfer over rdma_cm, for the fault tests
// (netem loss, reordering and duplication; a link pulled mid-transfer).
//
// The client moves -b BYTES in rounds of three CHUNK-byte operations: an
// RDMA WRITE of a pattern into a slot of the server's region, an RDMA READ
// of that slot back (checked byte for byte when it completes), and a SEND
// of another pattern (checked by the server).  -w rounds are in flight at
// once.  A last 16-byte SEND says "end, N rounds"; the server checks that it
// saw exactly N SENDs, in order, each byte right.
//
// With --fault-cmd, the client runs that command (say, "ip link set dev X
// down") after --fault-after rounds and expects its QP to fail: the first
// error completion must be IBV_WC_RETRY_EXC_ERR and come within the QP's
// retry budget, (retry_cnt + 1) * 4.096 us * 2^timeout, plus --slack
// seconds; every posted WR must still complete once (the rest flushed).  It
// then runs --recover-cmd, connects again with a new QP and moves -b BYTES
// byte-exact.  The server (-c 2) takes the aborted connection and the new
// one; it exits 0 only if it found no wrong byte and its last connection
// ended with a verified "end".
//
// With -d SECS the client posts new rounds for SECS seconds instead of
// moving -b BYTES, and reports the rate (the fairness and goodput tests run
// several at once, or one with and one without loss).  With --start-at T
// it connects, then waits until T (seconds since the epoch) to begin, so
// that clients started together transfer over the same interval.
//
// With -A (both sides), each round also puts an ATOMIC_WRITE of a round's
// value over the slot's first 8 bytes between the WRITE and the READ (the
// READ must see the value there), and with -L a FLUSH (global visibility,
// the slot's range), all through the ibv_wr_* API.  The server gives its
// QP FLUSH access once connected and then SENDs "ready", which the client
// waits for.  With -X (both sides), each round's READ is followed by an
// ATOMIC_FETCH_AND_ADD of 1 on a counter after the server's slots, which
// must return the number of rounds before it: the responder answers it
// while the READ's responses may still be under way, and must not answer
// it before them (a requester would take the READ for lost).
//
// Exit status: 0 on success, 1 on a failed check, 2 on bad usage.
#include "../../examples/common/rdma_raii.hpp"

#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <getopt.h>
#include <time.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

using namespace urdma::examples;

namespace {

constexpr uint64_t kEndMagic = 0x444e45524546580aULL;  // "\nXFEREND"

// The server's region, in the private data of rdma_accept (network order).
struct __attribute__((packed)) Region {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
	uint32_t chunk;   // largest SEND the server's receives take
	uint32_t recvs;   // receives the server keeps posted
};

// The last SEND.
struct __attribute__((packed)) EndMsg {
	uint64_t magic;
	uint64_t rounds;  // network order
};

enum Op : uint64_t {
	kWrite = 0, kRead = 1, kSend = 2, kAtomicWrite = 3, kFlush = 4,
	kFetchAdd = 5,
	kOps = 8  // wr_id = round * kOps + op
};


// The pattern of round R's operation OP: 64-bit words, each a function of
// (R, OP, word index), so a word landing in the wrong place is caught.
inline uint64_t pattern_word(uint64_t round, Op op, uint64_t k)
{
	uint64_t x = (round * kOps + op + 1) * 0x9e3779b97f4a7c15ULL +
		     k * 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 29);
}

// The 8 bytes round R's ATOMIC_WRITE puts over its slot's first word.
inline uint64_t atomic_value(uint64_t round)
{
	return pattern_word(round, kAtomicWrite, 0);
}

void fill(uint8_t *buf, size_t len, uint64_t round, Op op)
{
	auto *w = reinterpret_cast<uint64_t *>(buf);
	for (size_t k = 0; k < len / 8; k++)
		w[k] = pattern_word(round, op, k);
}

// The first wrong byte's offset, or -1.  With WORD0, the first word must
// be *WORD0 instead of the pattern's.
long check(const uint8_t *buf, size_t len, uint64_t round, Op op,
	   const uint64_t *word0 = nullptr)
{
	const auto *w = reinterpret_cast<const uint64_t *>(buf);
	for (size_t k = 0; k < len / 8; k++) {
		const uint64_t want = k == 0 && word0 ? *word0 :
				      pattern_word(round, op, k);
		if (w[k] == want)
			continue;
		for (size_t b = 0; b < 8; b++)
			if (buf[k * 8 + b] != reinterpret_cast<const uint8_t *>(&want)[b])
				return long(k * 8 + b);
	}
	return -1;
}

// What a wrong buffer holds instead: the (round, op) whose pattern its
// first word matches, searched near ROUND, and how many words are wrong.
std::string diagnose(const uint8_t *buf, size_t len, uint64_t round, Op op)
{
	const auto *w = reinterpret_cast<const uint64_t *>(buf);
	size_t wrong = 0;
	for (size_t k = 0; k < len / 8; k++)
		wrong += w[k] != pattern_word(round, op, k);
	size_t first = 0;
	while (first < len / 8 && w[first] == pattern_word(round, op, first))
		first++;
	char fw[64] = "";
	if (first < len / 8)
		std::snprintf(fw, sizeof(fw), " (the first, word %zu, is 0x%016" PRIx64 ")",
			      first, w[first]);
	std::string what = std::to_string(wrong) + " of " +
			   std::to_string(len / 8) + " words wrong" + fw + "; word 0 is ";
	const uint64_t lo = round > 64 ? round - 64 : 0;
	for (uint64_t r = lo; r < round + 64; r++)
		for (uint64_t o = 0; o < 3; o++)
			for (size_t k = 0; k < len / 8; k += 512)
				if (w[0] == pattern_word(r, Op(o), k))
					return what + "word " + std::to_string(k) +
					       " of round " + std::to_string(r) +
					       " op " + std::to_string(o);
	char hex[32];
	std::snprintf(hex, sizeof(hex), "0x%016" PRIx64, w[0]);
	return what + hex + " (no pattern nearby)";
}

double seconds_since(Clock::time_point t)
{
	return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Options {
	bool server = false;
	std::string addr, port = "7490";
	uint64_t bytes = 64ULL << 20;
	uint32_t chunk = 64 << 10;
	uint32_t window = 8;
	int conns = 1;
	int timeout_s = 60;
	int ack_timeout = 14;
	int duration_s = 0;  // -d: post rounds for this long instead of -b
	uint64_t start_at = 0;  // --start-at: begin then (epoch seconds)
	uint64_t fault_after = 0;
	std::string fault_cmd, recover_cmd;
	double slack_s = 3;
	bool atomic_write = false;  // -A
	bool flush = false;         // -L
	bool fetch_add = false;     // -X
	// The ibv_wr_* API, and the server's "ready".
	bool ex() const { return atomic_write || flush || fetch_add; }
};

// Waits for a completion channel event or a CM event, up to TIMEOUT_MS.
// Returns false on a poll error.
bool wait_either(int comp_fd, int cm_fd, int timeout_ms)
{
	pollfd p[2] = { { comp_fd, POLLIN, 0 }, { cm_fd, POLLIN, 0 } };
	return poll(p, 2, timeout_ms) >= 0 || errno == EINTR;
}

// Acks the channel's pending CQ event, if there is one (the fd is
// non-blocking).
void take_cq_event(ibv_comp_channel *ch)
{
	ibv_cq *cq;
	void *ctx;
	if (!ibv_get_cq_event(ch, &cq, &ctx))
		ibv_ack_cq_events(cq, 1);
}

Status nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return sys_error("fcntl");
	return {};
}

// ---- server --------------------------------------------------------------

struct ServerConn {
	CmId id;
	Endpoint ep;
	std::vector<uint8_t> region, recv_buf;
	Mr region_mr, recv_mr;
	uint64_t next_round = 0;
	bool ended = false, verified = false, corrupt = false;
	int number = 0;
};

class Server {
public:
	explicit Server(const Options &o) : o_(o) {}
	Status run();

private:
	Status accept(rdma_cm_id *id);
	Status ready();
	Status post_recv(uint32_t i);
	Status drain();
	void finish(const char *why);

	const Options &o_;
	EventChannel events_;
	std::unique_ptr<ServerConn> conn_;
	int done_ = 0, accepted_ = 0;
	bool corrupt_ = false, last_verified_ = false;
};

Status Server::post_recv(uint32_t i)
{
	ibv_sge sge{ reinterpret_cast<uintptr_t>(&conn_->recv_buf[size_t(i) * o_.chunk]),
		     o_.chunk, conn_->recv_mr->lkey };
	ibv_recv_wr wr{}, *bad;
	wr.wr_id = i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (int err = ibv_post_recv(conn_->ep.ibqp(), &wr, &bad))
		return sys_error("ibv_post_recv", err);
	return {};
}

Status Server::accept(rdma_cm_id *id)
{
	auto c = std::make_unique<ServerConn>();
	c->id.reset(id);
	c->number = ++accepted_;
	const uint32_t recvs = 2 * o_.window;
	URDMA_TRY(c->ep.create(id, int(recvs) + 4));
	URDMA_TRY(nonblocking(c->ep.channel->fd));
	// -X: the counter, after the slots.
	c->region.assign(size_t(o_.window) * o_.chunk + (o_.fetch_add ? 8 : 0), 0);
	c->recv_buf.assign(size_t(recvs) * o_.chunk, 0);
	c->region_mr.reset(ibv_reg_mr(c->ep.pd.get(), c->region.data(),
				      c->region.size(),
				      IBV_ACCESS_LOCAL_WRITE |
				      IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ |
				      (o_.fetch_add ?
				       IBV_ACCESS_REMOTE_ATOMIC : 0) |
				      (o_.flush ?
				       IBV_ACCESS_FLUSH_GLOBAL : 0)));
	c->recv_mr.reset(ibv_reg_mr(c->ep.pd.get(), c->recv_buf.data(),
				    c->recv_buf.size(), IBV_ACCESS_LOCAL_WRITE));
	if (!c->region_mr || !c->recv_mr)
		return sys_error("ibv_reg_mr");
	conn_ = std::move(c);
	for (uint32_t i = 0; i < recvs; i++)
		URDMA_TRY(post_recv(i));
	if (int err = ibv_req_notify_cq(conn_->ep.recv_cq.get(), 0))
		return sys_error("ibv_req_notify_cq", err);

	Region r;
	r.addr = htobe64(reinterpret_cast<uintptr_t>(conn_->region.data()));
	r.rkey = htonl(conn_->region_mr->rkey);
	r.len = htonl(uint32_t(conn_->region.size()));
	r.chunk = htonl(o_.chunk);
	r.recvs = htonl(recvs);
	rdma_conn_param param{};
	param.private_data = &r;
	param.private_data_len = sizeof(r);
	param.responder_resources = 16;
	param.rnr_retry_count = 7;
	if (rdma_accept(id, &param))
		return sys_error("rdma_accept");
	std::printf("urdma_xfer: connection %d accepted\n", conn_->number);
	std::fflush(stdout);
	return {};
}

// -A, -L: allow FLUSH on the QP (rdma_cm sets the access flags itself while
// connecting), then tell the client with an 8-byte SEND.
Status Server::ready()
{
	ServerConn &c = *conn_;
	ibv_qp_attr attr{};
	attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			       IBV_ACCESS_FLUSH_GLOBAL;
	if (int err = ibv_modify_qp(c.ep.ibqp(), &attr, IBV_QP_ACCESS_FLAGS))
		return sys_error("ibv_modify_qp(IBV_ACCESS_FLUSH_GLOBAL)", err);
	uint64_t word = kEndMagic;
	ibv_sge sge{ reinterpret_cast<uintptr_t>(&word), sizeof(word), 0 };
	ibv_send_wr wr{}, *bad;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	if (int err = ibv_post_send(c.ep.ibqp(), &wr, &bad))
		return sys_error("ibv_post_send(ready)", err);
	return {};
}

// Checks and re-posts every receive that completed.
Status Server::drain()
{
	ServerConn &c = *conn_;
	ibv_wc wc[16];
	int n;
	while ((n = ibv_poll_cq(c.ep.recv_cq.get(), 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				// Flushed when the connection went away.
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					std::printf("urdma_xfer: connection %d: receive: %s\n",
						    c.number, ibv_wc_status_str(wc[i].status));
				continue;
			}
			const uint8_t *buf = &c.recv_buf[wc[i].wr_id * o_.chunk];
			EndMsg end;
			if (wc[i].byte_len == sizeof(end)) {
				std::memcpy(&end, buf, sizeof(end));
				if (end.magic != kEndMagic) {
					std::printf("urdma_xfer: connection %d: a 16-byte SEND that is not \"end\"\n",
						    c.number);
					c.corrupt = true;
				}
				const uint64_t rounds = be64toh(end.rounds);
				c.ended = true;
				c.verified = !c.corrupt && rounds == c.next_round;
				std::printf("urdma_xfer: connection %d: end after %" PRIu64
					    " rounds; %" PRIu64 " SENDs checked%s\n",
					    c.number, rounds, c.next_round,
					    c.verified ? ", all right" : "");
			} else if (wc[i].byte_len != o_.chunk) {
				std::printf("urdma_xfer: connection %d: SEND %" PRIu64
					    " has %u bytes, expected %u\n", c.number,
					    c.next_round, wc[i].byte_len, o_.chunk);
				c.corrupt = true;
			} else {
				long bad = check(buf, o_.chunk, c.next_round, kSend);
				if (bad >= 0) {
					std::printf("urdma_xfer: connection %d: SEND %" PRIu64
						    ": byte %ld is wrong: %s\n", c.number,
						    c.next_round, bad,
						    diagnose(buf, o_.chunk, c.next_round,
							     kSend).c_str());
					c.corrupt = true;
				}
				c.next_round++;
			}
			URDMA_TRY(post_recv(uint32_t(wc[i].wr_id)));
		}
		std::fflush(stdout);
	}
	if (n < 0)
		return Status::error("ibv_poll_cq failed");
	return {};
}

void Server::finish(const char *why)
{
	ServerConn &c = *conn_;
	drain();
	if (!c.ended)
		std::printf("urdma_xfer: connection %d: %s before \"end\", after %" PRIu64
			    " SENDs checked\n", c.number, why, c.next_round);
	corrupt_ |= c.corrupt;
	last_verified_ = c.verified;
	std::fflush(stdout);
	rdma_disconnect(c.id.get());
	conn_.reset();
	done_++;
}

Status Server::run()
{
	CmId listener;
	URDMA_TRY(listen_on(o_.addr, o_.port, 4, &events_, &listener));
	URDMA_TRY(nonblocking(events_->fd));
	std::printf("urdma_xfer: listening on port %s for %d connection(s)\n",
		    o_.port.c_str(), o_.conns);
	std::fflush(stdout);

	auto idle_since = Clock::now();
	while (done_ < o_.conns) {
		if (seconds_since(idle_since) > o_.timeout_s)
			return Status::error("nothing happened for " +
					     std::to_string(o_.timeout_s) + " s");
		int comp_fd = conn_ ? conn_->ep.channel->fd : -1;
		if (!wait_either(comp_fd, events_->fd, 200))
			return sys_error("poll");
		if (conn_) {
			take_cq_event(conn_->ep.channel.get());
			if (int err = ibv_req_notify_cq(conn_->ep.recv_cq.get(), 0))
				return sys_error("ibv_req_notify_cq", err);
			const uint64_t before = conn_->next_round;
			URDMA_TRY(drain());
			if (conn_->next_round != before || conn_->ended)
				idle_since = Clock::now();
		}
		rdma_cm_event *ev;
		if (rdma_get_cm_event(events_.get(), &ev))
			continue;  // EAGAIN: none
		idle_since = Clock::now();
		const rdma_cm_event_type type = ev->event;
		rdma_cm_id *id = ev->id;
		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if (conn_)
				finish("replaced by a new connection");
			URDMA_TRY(accept(id));
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (conn_ && id == conn_->id.get() && o_.ex())
				URDMA_TRY(ready());
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_REJECTED:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_CONNECT_ERROR:
			if (conn_ && id == conn_->id.get())
				finish(rdma_event_str(type));
			break;
		default:
			std::printf("urdma_xfer: CM event %s\n", rdma_event_str(type));
			break;
		}
	}
	if (corrupt_)
		return Status::error("wrong bytes received (see above)");
	if (!last_verified_)
		return Status::error("the last connection did not end verified");
	return {};
}

// ---- client --------------------------------------------------------------

class Client {
public:
	explicit Client(const Options &o) : o_(o) {}
	Status run();

private:
	Status connect();
	Status transfer(uint64_t rounds, bool fault, uint64_t *moved = nullptr);
	Status post_round(uint64_t round);
	Status post_round_ex(uint64_t round, uint8_t *base, uint64_t raddr);
	uint64_t per_round() const
	{
		return 3 + o_.atomic_write + o_.flush + o_.fetch_add;
	}
	Status send_end(uint64_t rounds);
	void disconnect();
	// -X: where round R's FETCH_ADD returns its value.
	uintptr_t fetch_at(uint64_t round)
	{
		return reinterpret_cast<uintptr_t>(&buf_[size_t(window_) * 3 * o_.chunk +
							 (round % window_) * 8]);
	}

	const Options &o_;
	EventChannel events_;
	CmId id_;
	std::unique_ptr<Endpoint> ep_;  // destroyed in its members' reverse order
	Mr mr_;
	std::vector<uint8_t> buf_;  // per slot: write source, read target, send source
	uint64_t ready_ = 0;        // -A: the server's "ready"
	Mr ready_mr_;
	uint64_t raddr_ = 0;
	uint32_t rkey_ = 0, window_ = 0;
	uint64_t counter_ = 0;      // -X: the server's counter
	uint64_t fetched_ = 0;      // ... and the value the next FETCH_ADD returns
};

Status Client::connect()
{
	URDMA_TRY(resolve_route_to(o_.addr, o_.port, o_.timeout_s, &events_, &id_,
				   uint8_t(o_.ack_timeout)));
	CmEvent ev;
	ep_ = std::make_unique<Endpoint>();
	const uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
			     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE |
			     IBV_QP_EX_WITH_FLUSH |
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	URDMA_TRY(ep_->create(id_.get(), int(5 * o_.window + 2),
			      o_.ex() ? ops : 0));
	if (o_.ex()) {
		// The server's "ready" SEND comes once it allows FLUSH.
		ready_mr_.reset(ibv_reg_mr(ep_->pd.get(), &ready_, sizeof(ready_),
					   IBV_ACCESS_LOCAL_WRITE));
		if (!ready_mr_)
			return sys_error("ibv_reg_mr");
		ibv_sge sge{ reinterpret_cast<uintptr_t>(&ready_), sizeof(ready_),
			     ready_mr_->lkey };
		ibv_recv_wr rwr{}, *bad;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		if (int err = ibv_post_recv(ep_->ibqp(), &rwr, &bad))
			return sys_error("ibv_post_recv", err);
	}
	rdma_conn_param param{};
	param.initiator_depth = 16;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(id_.get(), &param))
		return sys_error("rdma_connect");
	URDMA_TRY(next_cm_event(events_.get(), RDMA_CM_EVENT_ESTABLISHED,
				o_.timeout_s, &ev));
	Region r;
	if (ev.private_data.size() < sizeof(r))
		return Status::error("short private data from the server");
	std::memcpy(&r, ev.private_data.data(), sizeof(r));
	raddr_ = be64toh(r.addr);
	rkey_ = ntohl(r.rkey);
	if (ntohl(r.chunk) != o_.chunk)
		return Status::error("the server's chunk is " +
				     std::to_string(ntohl(r.chunk)) + ", ours " +
				     std::to_string(o_.chunk) + " (use the same -k)");
	window_ = std::min(o_.window, ntohl(r.len) / o_.chunk);
	if (!window_)
		return Status::error("the server's region is smaller than a chunk");
	if (o_.fetch_add && ntohl(r.len) % o_.chunk != 8)
		return Status::error("the server has no counter (use -X on both sides)");
	counter_ = raddr_ + ntohl(r.len) - 8;
	fetched_ = 0;
	// Per slot: write source, read target, send source; then per slot
	// the 8 bytes a FETCH_ADD returns.
	buf_.assign(size_t(window_) * (3 * size_t(o_.chunk) + 8), 0);
	mr_.reset(ibv_reg_mr(ep_->pd.get(), buf_.data(), buf_.size(),
			     IBV_ACCESS_LOCAL_WRITE));
	if (!mr_)
		return sys_error("ibv_reg_mr");
	if (o_.ex()) {
		ibv_wc wc;
		URDMA_TRY(wait_wc(ep_->recv_cq.get(), ep_->channel.get(),
				  o_.timeout_s, &wc));
		if (wc.byte_len != sizeof(ready_) || ready_ != kEndMagic)
			return Status::error("expected the server's \"ready\"");
	}
	return {};
}

Status Client::post_round(uint64_t round)
{
	const size_t slot = round % window_;
	uint8_t *base = &buf_[slot * 3 * o_.chunk];
	fill(base, o_.chunk, round, kWrite);
	fill(base + 2 * size_t(o_.chunk), o_.chunk, round, kSend);
	std::memset(base + o_.chunk, 0, o_.chunk);

	if (o_.ex())
		return post_round_ex(round, base, raddr_ + slot * o_.chunk);

	ibv_sge sge[3];
	ibv_send_wr wr[3] = {};
	const ibv_wr_opcode opcodes[3] = { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
					   IBV_WR_SEND };
	for (int i = 0; i < 3; i++) {
		sge[i] = { reinterpret_cast<uintptr_t>(base + size_t(i) * o_.chunk),
			   o_.chunk, mr_->lkey };
		wr[i].wr_id = round * kOps + uint64_t(i);
		wr[i].opcode = opcodes[i];
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i < 2 ? &wr[i + 1] : nullptr;
		wr[i].wr.rdma.remote_addr = raddr_ + slot * o_.chunk;
		wr[i].wr.rdma.rkey = rkey_;
	}
	ibv_send_wr *bad;
	if (int err = ibv_post_send(ep_->ibqp(), wr, &bad))
		return sys_error("ibv_post_send", err);
	return {};
}

// -A/-L/-X: WRITE, ATOMIC_WRITE, FLUSH, READ, FETCH_ADD, SEND through the
// ibv_wr_* API.
Status Client::post_round_ex(uint64_t round, uint8_t *base, uint64_t raddr)
{
	ibv_qp_ex *qx = ibv_qp_to_qp_ex(ep_->ibqp());
	const uint64_t value = atomic_value(round);
	const uint32_t lkey = mr_->lkey;
	auto at = [&](size_t i) { return reinterpret_cast<uintptr_t>(base + i * o_.chunk); };

	ibv_wr_start(qx);
	qx->wr_flags = IBV_SEND_SIGNALED;
	qx->wr_id = round * kOps + kWrite;
	ibv_wr_rdma_write(qx, rkey_, raddr);
	ibv_wr_set_sge(qx, lkey, at(0), o_.chunk);
	if (o_.atomic_write) {
		qx->wr_id = round * kOps + kAtomicWrite;
		ibv_wr_atomic_write(qx, rkey_, raddr, &value);
	}
	if (o_.flush) {
		qx->wr_id = round * kOps + kFlush;
		ibv_wr_flush(qx, rkey_, raddr, o_.chunk, IBV_FLUSH_GLOBAL,
			     IBV_FLUSH_RANGE);
	}
	qx->wr_id = round * kOps + kRead;
	ibv_wr_rdma_read(qx, rkey_, raddr);
	ibv_wr_set_sge(qx, lkey, at(1), o_.chunk);
	if (o_.fetch_add) {
		qx->wr_id = round * kOps + kFetchAdd;
		ibv_wr_atomic_fetch_add(qx, rkey_, counter_, 1);
		ibv_wr_set_sge(qx, lkey, fetch_at(round), 8);
	}
	qx->wr_id = round * kOps + kSend;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, lkey, at(2), o_.chunk);
	if (int err = ibv_wr_complete(qx))
		return sys_error("ibv_wr_complete", err);
	return {};
}

// Moves ROUNDS rounds, or with -d as many as it starts in that time (the
// number goes to *MOVED).  With FAULT, runs the fault command after
// --fault-after rounds and expects the QP to fail (see the top of the file).
Status Client::transfer(uint64_t rounds, bool fault, uint64_t *moved)
{
	const auto start = Clock::now();
	const auto more = [&](uint64_t posted) {
		return posted < rounds && (!o_.duration_s ||
					   seconds_since(start) < o_.duration_s);
	};
	uint64_t posted = 0, done = 0, outstanding = 0;
	std::optional<Clock::time_point> fault_at;
	std::optional<double> error_after;
	uint64_t flushed = 0;
	while (more(posted) && posted < window_) {
		URDMA_TRY(post_round(posted++));
		outstanding += per_round();
	}
	while (outstanding) {
		ibv_wc wc{};  // status SUCCESS unless wait_wc fills it
		Status st = wait_wc(ep_->send_cq.get(), ep_->channel.get(),
				    o_.timeout_s, &wc);
		if (st.ok()) {
			if (error_after)
				return Status::error("a success after the QP failed");
		} else if (wc.status == IBV_WC_SUCCESS || !fault_at) {
			return st;  // a timeout, or an error without a fault
		} else if (!error_after) {
			error_after = seconds_since(*fault_at);
			std::printf("urdma_xfer: first error %.3f s after the fault: %s\n",
				    *error_after, ibv_wc_status_str(wc.status));
			if (wc.status != IBV_WC_RETRY_EXC_ERR)
				return Status::error("expected IBV_WC_RETRY_EXC_ERR first");
		} else if (wc.status == IBV_WC_WR_FLUSH_ERR) {
			flushed++;
		} else {
			return Status::error(std::string("after the first error: ") +
					     ibv_wc_status_str(wc.status));
		}
		outstanding--;
		if (error_after)
			continue;

		const uint64_t round = wc.wr_id / kOps;
		const int op = int(wc.wr_id % kOps);
		if (op == kRead) {
			const uint8_t *rd = &buf_[(round % window_) * 3 * o_.chunk +
						  o_.chunk];
			const uint64_t value = atomic_value(round);
			long bad = check(rd, o_.chunk, round, kWrite,
					 o_.atomic_write ? &value : nullptr);
			if (bad >= 0)
				return Status::error("round " + std::to_string(round) +
						     ": READ back byte " +
						     std::to_string(bad) + " is wrong: " +
						     diagnose(rd, o_.chunk, round, kWrite));
		}
		if (op == kFetchAdd) {
			uint64_t got;
			std::memcpy(&got, reinterpret_cast<const void *>(fetch_at(round)),
				    sizeof(got));
			if (got != fetched_)
				return Status::error("round " + std::to_string(round) +
						     ": FETCH_ADD returned " +
						     std::to_string(got) + ", not " +
						     std::to_string(fetched_));
			fetched_++;
		}
		if (op != kSend)
			continue;
		done++;
		if (fault && !fault_at && done >= o_.fault_after) {
			std::printf("urdma_xfer: %" PRIu64 " rounds done; running \"%s\"\n",
				    done, o_.fault_cmd.c_str());
			std::fflush(stdout);
			fault_at = Clock::now();
			if (std::system(o_.fault_cmd.c_str()) != 0)
				return Status::error("the fault command failed");
		}
		// Keep posting through a fault: the link is down, the WRs
		// must fail.
		if (more(posted) || (fault_at && !error_after)) {
			URDMA_TRY(post_round(posted++));
			outstanding += per_round();
		}
	}
	const double secs = seconds_since(start);
	if (fault) {
		if (!error_after)
			return Status::error("the fault never failed the QP");
		ibv_qp_attr attr;
		ibv_qp_init_attr init;
		if (int err = ibv_query_qp(ep_->ibqp(), &attr,
					   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &init))
			return sys_error("ibv_query_qp", err);
		const double budget = (attr.retry_cnt + 1) * 4.096e-6 *
				      double(1ULL << attr.timeout);
		std::printf("urdma_xfer: %" PRIu64 " WRs flushed; retry budget %.3f s "
			    "(retry_cnt %u, timeout %u), slack %.1f s\n", flushed,
			    budget, attr.retry_cnt, attr.timeout, o_.slack_s);
		if (*error_after > budget + o_.slack_s)
			return Status::error("the QP failed later than its retry budget");
		return {};
	}
	if (moved)
		*moved = done;
	const double mb = double(done) * 3 * o_.chunk / 1e6;
	std::printf("urdma_xfer: %" PRIu64 " rounds, %.1f MB moved (WRITE, READ, SEND), "
		    "every byte checked, in %.1f s (%.1f MB/s)\n", done, mb, secs,
		    mb / secs);
	return {};
}

Status Client::send_end(uint64_t rounds)
{
	EndMsg end{ kEndMagic, htobe64(rounds) };
	std::memcpy(buf_.data(), &end, sizeof(end));
	ibv_sge sge{ reinterpret_cast<uintptr_t>(buf_.data()), sizeof(end),
		     mr_->lkey };
	ibv_send_wr wr{}, *bad;
	wr.wr_id = ~0ULL;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (int err = ibv_post_send(ep_->ibqp(), &wr, &bad))
		return sys_error("ibv_post_send", err);
	ibv_wc wc;
	return wait_wc(ep_->send_cq.get(), ep_->channel.get(), o_.timeout_s, &wc);
}

void Client::disconnect()
{
	CmEvent ev;
	if (id_ && !rdma_disconnect(id_.get()))
		next_cm_event(events_.get(), RDMA_CM_EVENT_DISCONNECTED, 5, &ev);
	mr_.reset();
	ep_.reset();
	id_.reset();
	events_.reset();
}

Status Client::run()
{
	const uint64_t per_round = 3ULL * o_.chunk;
	uint64_t rounds = o_.duration_s ? ~0ULL : (o_.bytes + per_round - 1) / per_round;
	const bool fault = !o_.fault_cmd.empty();
	URDMA_TRY(connect());
	if (o_.duration_s)
		std::printf("urdma_xfer: connected; %d s of rounds", o_.duration_s);
	else
		std::printf("urdma_xfer: connected; %" PRIu64 " rounds", rounds);
	std::printf(" of %u-byte WRITE, READ and SEND, %u in flight\n", o_.chunk,
		    window_);
	std::fflush(stdout);
	if (o_.start_at) {
		const timespec at = { time_t(o_.start_at), 0 };
		while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, nullptr) == EINTR) {
		}
	}
	if (fault) {
		URDMA_TRY(transfer(~0ULL, true));
		std::printf("urdma_xfer: running \"%s\"\n", o_.recover_cmd.c_str());
		std::fflush(stdout);
		if (!o_.recover_cmd.empty() && std::system(o_.recover_cmd.c_str()))
			return Status::error("the recover command failed");
		// With the link back, the server hears the disconnect.
		disconnect();
		// The link may take a moment to carry traffic again.
		Status st;
		for (int i = 0; i < 10; i++) {
			st = connect();
			if (st.ok())
				break;
			std::printf("urdma_xfer: reconnect: %s\n", st.message().c_str());
			std::fflush(stdout);
			disconnect();
			sleep(1);
		}
		URDMA_TRY(st);
		std::printf("urdma_xfer: connected again with a new QP\n");
	}
	URDMA_TRY(transfer(rounds, false, &rounds));
	URDMA_TRY(send_end(rounds));
	disconnect();
	return {};
}

bool parse(int argc, char **argv, Options *o)
{
	static const option longs[] = {
		{ "fault-after", required_argument, nullptr, 'F' },
		{ "fault-cmd", required_argument, nullptr, 'C' },
		{ "recover-cmd", required_argument, nullptr, 'R' },
		{ "slack", required_argument, nullptr, 'S' },
		{ "ack-timeout", required_argument, nullptr, 'T' },
		{ "atomic-write", no_argument, nullptr, 'A' },
		{ "flush", no_argument, nullptr, 'L' },
		{ "fetch-add", no_argument, nullptr, 'X' },
		{ "duration", required_argument, nullptr, 'd' },
		{ "start-at", required_argument, nullptr, 'B' },
		{ nullptr, 0, nullptr, 0 },
	};
	auto num = [](const char *s, unsigned long long max, auto *v) {
		char *end;
		errno = 0;
		unsigned long long n = std::strtoull(s, &end, 0);
		if (errno || !*s || *end || n > max)
			return false;
		*v = decltype(+*v)(n);
		return true;
	};
	bool good = true;
	for (int c; good && (c = getopt_long(argc, argv, "sALXa:p:b:d:k:w:c:t:", longs,
					      nullptr)) != -1;) {
		switch (c) {
		case 's': o->server = true; break;
		case 'A': o->atomic_write = true; break;
		case 'L': o->flush = true; break;
		case 'X': o->fetch_add = true; break;
		case 'a': o->addr = optarg; break;
		case 'p': o->port = optarg; break;
		case 'b': good = num(optarg, 1ULL << 40, &o->bytes); break;
		case 'd': good = num(optarg, 3600, &o->duration_s); break;
		case 'B': good = num(optarg, 1ULL << 40, &o->start_at); break;
		case 'k': good = num(optarg, 1U << 24, &o->chunk) && o->chunk >= 64 &&
				  !(o->chunk % 8); break;
		case 'w': good = num(optarg, 64, &o->window) && o->window; break;
		case 'c': good = num(optarg, 16, &o->conns) && o->conns; break;
		case 't': good = num(optarg, 3600, &o->timeout_s) && o->timeout_s; break;
		case 'F': good = num(optarg, 1ULL << 40, &o->fault_after); break;
		case 'C': o->fault_cmd = optarg; break;
		case 'R': o->recover_cmd = optarg; break;
		case 'S': good = num(optarg, 600, &o->slack_s); break;
		case 'T': good = num(optarg, 31, &o->ack_timeout); break;
		default: good = false; break;
		}
	}
	if (good && optind == argc && (o->server || !o->addr.empty()))
		return true;
	std::fprintf(stderr,
		     "usage: %s -s [-A] [-L] [-X] [-a ADDR] [-p PORT] [-k CHUNK] [-w WINDOW] [-c CONNS] [-t SECS]\n"
		     "       %s -a SERVER [-A] [-L] [-X] [-p PORT] [-b BYTES | -d SECS] [-k CHUNK] [-w WINDOW] [-t SECS]\n"
		     "          [--ack-timeout N] [--start-at EPOCH] [--fault-after ROUNDS --fault-cmd CMD\n"
		     "          [--recover-cmd CMD] [--slack SECS]]\n", argv[0], argv[0]);
	return false;
}

}  // namespace

int main(int argc, char **argv)
{
	Options o;
	if (!parse(argc, argv, &o))
		return 2;
	Status st = o.server ? Server(o).run() : Client(o).run();
	if (!st.ok()) {
		std::fprintf(stderr, "urdma_xfer: error: %s\n", st.message().c_str());
		return 1;
	}
	std::printf("urdma_xfer: OK\n");
	return 0;
}
