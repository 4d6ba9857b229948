// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// Plain RAII wrappers over libibverbs for the urdma tests.  No exceptions
// cross the C boundary: constructors never throw, callers check get().
#pragma once

#include <infiniband/verbs.h>

#include <cstdlib>
#include <memory>
#include <string>

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

using Context = std::unique_ptr<ibv_context, ContextDeleter>;
using Pd = std::unique_ptr<ibv_pd, PdDeleter>;
using Mr = std::unique_ptr<ibv_mr, MrDeleter>;
using Mw = std::unique_ptr<ibv_mw, MwDeleter>;

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

} // namespace urdma::test
