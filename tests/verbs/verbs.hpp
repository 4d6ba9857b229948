// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Plain RAII wrappers over libibverbs for the urdma tests.  No exceptions
// cross the C boundary: constructors never throw, callers check get().
#pragma once

#include <infiniband/verbs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace urdma::test {

struct DeviceListDeleter {
	void operator()(ibv_device **l) const { ibv_free_device_list(l); }
};
struct ContextDeleter {
	void operator()(ibv_context *c) const { ibv_close_device(c); }
};
struct PdDeleter {
	void operator()(ibv_pd *p) const { ibv_dealloc_pd(p); }
};

struct MrDeleter {
	void operator()(ibv_mr *m) const { ibv_dereg_mr(m); }
};
struct MwDeleter {
	void operator()(ibv_mw *m) const { ibv_dealloc_mw(m); }
};

struct CompChannelDeleter {
	void operator()(ibv_comp_channel *c) const
	{
		ibv_destroy_comp_channel(c);
	}
};
struct CqDeleter {
	void operator()(ibv_cq *c) const { ibv_destroy_cq(c); }
};
struct QpDeleter {
	void operator()(ibv_qp *q) const { ibv_destroy_qp(q); }
};
struct SrqDeleter {
	void operator()(ibv_srq *s) const { ibv_destroy_srq(s); }
};
struct AhDeleter {
	void operator()(ibv_ah *a) const { ibv_destroy_ah(a); }
};

using Context = std::unique_ptr<ibv_context, ContextDeleter>;
using Pd = std::unique_ptr<ibv_pd, PdDeleter>;
using Mr = std::unique_ptr<ibv_mr, MrDeleter>;
using Mw = std::unique_ptr<ibv_mw, MwDeleter>;
using CompChannel = std::unique_ptr<ibv_comp_channel, CompChannelDeleter>;
// Also holds extended CQs: Cq(ibv_cq_ex_to_cq(ibv_create_cq_ex(...))).
using Cq = std::unique_ptr<ibv_cq, CqDeleter>;
using Qp = std::unique_ptr<ibv_qp, QpDeleter>;
using Srq = std::unique_ptr<ibv_srq, SrqDeleter>;
using Ah = std::unique_ptr<ibv_ah, AhDeleter>;

// The device under test: $URDMA_DEV, default urdma0.
inline std::string device_name()
{
	const char *e = std::getenv("URDMA_DEV");
	return e && *e ? e : "urdma0";
}

// The netdev it is bound to.  The guest harness exports the mode in
// $URDMA_NETDEV ("veth" puts the device on veth0, "lo" on lo); any other
// value is taken as the netdev's name.
inline std::string netdev_name()
{
	const char *e = std::getenv("URDMA_NETDEV");
	std::string mode = e && *e ? e : "veth";
	return mode == "veth" ? "veth0" : mode;
}

// True on the project's KASAN/lockdep kernel (the guest harness exports
// URDMA_KERNEL), where exhaustive sweeps are too slow under TCG.
inline bool on_debug_kernel()
{
	const char *e = std::getenv("URDMA_KERNEL");
	return e && std::string(e) == "debug";
}

class DeviceList {
public:
	DeviceList() : list_(ibv_get_device_list(&num_)) {}
	int size() const { return list_ ? num_ : 0; }
	ibv_device *at(int i) const { return list_.get()[i]; }
	ibv_device *find(const std::string &name) const
	{
		for (int i = 0; i < size(); i++)
			if (name == ibv_get_device_name(at(i)))
				return at(i);
		return nullptr;
	}

private:
	int num_ = 0;
	std::unique_ptr<ibv_device *, DeviceListDeleter> list_;
};

// Open the device under test; nullptr (and errno) if it is not there.
inline Context open_device(const std::string &name = device_name())
{
	DeviceList list;
	ibv_device *dev = list.find(name);
	if (!dev) {
		errno = ENODEV;
		return Context();
	}
	return Context(ibv_open_device(dev));
}

// GID @index of port 1: what a loopback address vector points at.
inline ibv_gid port_gid(ibv_context *ctx, int index = 0)
{
	ibv_gid gid{};
	if (ibv_query_gid(ctx, 1, index, &gid))
		memset(&gid, 0, sizeof(gid));
	return gid;
}

// A RoCEv2 address vector to GID 0 of port 1 (this host).
inline ibv_ah_attr loopback_ah_attr(ibv_context *ctx)
{
	ibv_ah_attr ah{};
	ah.is_global = 1;
	ah.grh.dgid = port_gid(ctx);
	ah.grh.sgid_index = 0;
	ah.grh.hop_limit = 64;
	ah.port_num = 1;
	return ah;
}

inline ibv_qp_cap qp_cap(uint32_t send_wr, uint32_t recv_wr,
			 uint32_t send_sge, uint32_t recv_sge,
			 uint32_t inline_data = 0)
{
	ibv_qp_cap cap{};
	cap.max_send_wr = send_wr;
	cap.max_recv_wr = recv_wr;
	cap.max_send_sge = send_sge;
	cap.max_recv_sge = recv_sge;
	cap.max_inline_data = inline_data;
	return cap;
}

// A QP of @type whose send and receive completions go to @cq; with an
// @srq the receive queue is the SRQ's and @cap's receive sizes are 0.
inline ibv_qp_init_attr qp_init_attr(ibv_qp_type type, ibv_cq *cq,
				     ibv_qp_cap cap = qp_cap(16, 16, 1, 1),
				     ibv_srq *srq = nullptr)
{
	ibv_qp_init_attr a{};
	a.qp_type = type;
	a.send_cq = cq;
	a.recv_cq = cq;
	a.srq = srq;
	if (srq) {
		cap.max_recv_wr = 0;
		cap.max_recv_sge = 0;
	}
	a.cap = cap;
	return a;
}

// Everything @cmd writes to stdout (and stderr if it redirects it).
inline std::string command_output(const std::string &cmd)
{
	std::string out;
	FILE *f = popen(cmd.c_str(), "r");
	if (!f)
		return out;
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		out.append(buf, n);
	pclose(f);
	return out;
}

// The top-level objects of a JSON array of objects, as text ("[{..},{..}]"
// is what `rdma -j` prints).  Strings are skipped so braces in them do not
// count.
inline std::vector<std::string> json_objects(const std::string &json)
{
	std::vector<std::string> objs;
	int depth = 0;
	size_t start = 0;
	bool in_str = false;
	for (size_t i = 0; i < json.size(); i++) {
		char c = json[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '{') {
			if (depth++ == 0)
				start = i;
		} else if (c == '}' && depth > 0) {
			if (--depth == 0)
				objs.push_back(json.substr(start, i - start + 1));
		}
	}
	return objs;
}

// The raw value of "key" in a flat JSON object: the text of a string
// without its quotes, or a number's text; "" if the key is absent.
inline std::string json_value(const std::string &obj, const std::string &key)
{
	const std::string k = "\"" + key + "\"";
	for (size_t p = obj.find(k); p != std::string::npos;
	     p = obj.find(k, p + 1)) {
		size_t i = p + k.size();
		while (i < obj.size() && isspace((unsigned char)obj[i]))
			i++;
		if (i >= obj.size() || obj[i] != ':')
			continue;  // a string value that happens to equal key
		i++;
		while (i < obj.size() && isspace((unsigned char)obj[i]))
			i++;
		if (i < obj.size() && obj[i] == '"') {
			size_t e = obj.find('"', i + 1);
			return e == std::string::npos ? "" :
			       obj.substr(i + 1, e - i - 1);
		}
		size_t e = obj.find_first_of(",}] \t\r\n", i);
		return obj.substr(i, e == std::string::npos ? e : e - i);
	}
	return "";
}

// A non-negative integer from json_value(), in @base; -1 if absent or not
// a number.  `rdma -j` prints counts as decimal numbers and keys (lkeys,
// rkeys) as hex strings, "%x" without a prefix ("0x" is accepted too).
inline long long json_uint(const std::string &obj, const std::string &key,
			   int base = 10)
{
	std::string v = json_value(obj, key);
	if (v.empty())
		return -1;
	char *end = nullptr;
	errno = 0;
	unsigned long long n = strtoull(v.c_str(), &end, base);
	return errno || *end ? -1 : (long long)n;
}

/*
 * Objects that exist on a device right now, whoever owns them: the core's
 * resource tracking as `rdma -j resource show DEV` reports it, for example
 *   [{"ifindex":3,"ifname":"urdma0","pd":1,"cq":1,"qp":1,"cm_id":0,
 *     "mr":0,"ctx":0,"srq":0}]
 * The device's limits (max_pd, max_cq, ...) count all of these, kernel
 * objects included: the MAD layer owns a PD, a CQ and the GSI QP.
 *
 * One object is invisible there: a kernel PD on a device without a
 * global DMA lkey (urdma has none) carries an internal DMA MR
 * (pd->__internal_mr, from ib_alloc_pd) that the core does not track.  It
 * counts against max_mr all the same, so mr adds one per PD whose
 * local_dma_lkey is non-zero in `rdma -j resource show pd dev DEV` (urdma
 * keys are never 0, and PDs without an internal MR report 0).  That field
 * needs CAP_NET_ADMIN; without it mr is unknown (-1).
 */
struct DeviceUsage {
	long long pd = -1, cq = -1, qp = -1, srq = -1, mr = -1;
	std::string error;  // why a count is missing; empty when all are known

	bool ok() const { return error.empty(); }
	bool operator==(const DeviceUsage &o) const
	{
		return pd == o.pd && cq == o.cq && qp == o.qp &&
		       srq == o.srq && mr == o.mr;
	}
	bool operator!=(const DeviceUsage &o) const { return !(*this == o); }
	std::string str() const
	{
		return "pd " + std::to_string(pd) + " cq " + std::to_string(cq) +
		       " qp " + std::to_string(qp) + " srq " +
		       std::to_string(srq) + " mr " + std::to_string(mr);
	}
};

// One reading of DeviceUsage; see settled_device_usage().
inline DeviceUsage read_device_usage(const std::string &dev = device_name())
{
	DeviceUsage u;
	std::string out = command_output("rdma -j resource show " + dev +
					 " 2>&1");
	std::string summary;
	for (const std::string &o : json_objects(out))
		if (json_value(o, "ifname") == dev)
			summary = o;
	if (summary.empty()) {
		u.error = "`rdma -j resource show " + dev + "` printed no " +
			  "object for the device: " + out;
		return u;
	}
	u.pd = json_uint(summary, "pd");
	u.cq = json_uint(summary, "cq");
	u.qp = json_uint(summary, "qp");
	u.srq = json_uint(summary, "srq");
	long long mr = json_uint(summary, "mr");
	if (u.pd < 0 || u.cq < 0 || u.qp < 0 || u.srq < 0 || mr < 0) {
		u.error = "a count is missing in: " + summary;
		return u;
	}

	out = command_output("rdma -j resource show pd dev " + dev + " 2>&1");
	long long internal = 0, pds = 0;
	for (const std::string &o : json_objects(out)) {
		if (json_value(o, "ifname") != dev)
			continue;
		pds++;
		long long lkey = json_uint(o, "local_dma_lkey", 16);
		if (lkey < 0) {
			u.error = "no local_dma_lkey in `rdma resource show pd` "
				  "(needs CAP_NET_ADMIN): " + o;
			return u;
		}
		internal += lkey != 0;
	}
	if (pds != u.pd) {
		u.error = "`rdma resource show pd` lists " +
			  std::to_string(pds) + " PDs, the summary " +
			  std::to_string(u.pd) + ": " + out;
		return u;
	}
	u.mr = mr + internal;
	return u;
}

// DeviceUsage once it stopped moving (objects of processes that just
// exited may still be on their way out): two equal, complete readings
// 100 ms apart, waiting up to 5 s; else the last reading.
inline DeviceUsage device_usage(const std::string &dev = device_name())
{
	DeviceUsage prev = read_device_usage(dev);
	for (int i = 0; i < 50; i++) {
		usleep(100 * 1000);
		DeviceUsage now = read_device_usage(dev);
		if (prev.ok() && now.ok() && now == prev)
			return now;
		prev = now;
	}
	return prev;
}

/*
 * The port's statistics as `rdma -j statistic show link DEV/PORT` prints
 * them: one flat JSON object per port, hw counters as decimal numbers,
 *   [{"ifindex":3,"ifname":"urdma0","port":1,"kicks":12,"wqes":10000,...}]
 * Read one with json_uint(obj, "kicks").  Empty if the tool printed no
 * object for the port; @raw (if given) receives what it printed.
 */
inline std::string link_statistics(const std::string &dev = device_name(),
				   int port = 1, std::string *raw = nullptr)
{
	std::string out = command_output("rdma -j statistic show link " + dev +
					 "/" + std::to_string(port) + " 2>&1");
	if (raw)
		*raw = out;
	for (const std::string &o : json_objects(out))
		if (json_value(o, "ifname") == dev &&
		    json_uint(o, "port") == port)
			return o;
	return "";
}

// Pages pinned with FOLL_PIN system-wide (pin_user_pages, which
// ib_umem_get uses), from /proc/vmstat; -1 without the counters.
inline long pins_outstanding()
{
	std::ifstream f("/proc/vmstat");
	std::string k;
	long v, acq = -1, rel = -1;
	while (f >> k >> v) {
		if (k == "nr_foll_pin_acquired")
			acq = v;
		else if (k == "nr_foll_pin_released")
			rel = v;
	}
	return acq < 0 || rel < 0 ? -1 : acq - rel;
}

// pins_outstanding() once it stopped moving: pins of processes that exited
// earlier may still be on their way out (deferred file release).
inline long settled_pins()
{
	long before = pins_outstanding();
	for (int i = 0; i < 50; i++) {
		usleep(100 * 1000);
		long now = pins_outstanding();
		if (now == before)
			break;
		before = now;
	}
	return before;
}

// After a child holding pins was killed: wait (up to 5 s) for the count
// to drop back to @before and return it.
inline long pins_after_exit(long before)
{
	long after = pins_outstanding();
	for (int i = 0; i < 50 && after > before; i++) {
		usleep(100 * 1000);
		after = pins_outstanding();
	}
	return after;
}

} // namespace urdma::test
