// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// An anonymous (optionally huge-page) mapping that unmaps itself.
#pragma once

#include <sys/mman.h>

#include <cstddef>

namespace urdma::test {

class Mapping {
public:
	// @populate: fault every page in now (else nothing is touched yet).
	Mapping(size_t len, int prot = PROT_READ | PROT_WRITE, int flags = 0,
		bool populate = true)
		: len_(len)
	{
		void *p = mmap(nullptr, len, prot,
			       MAP_PRIVATE | MAP_ANONYMOUS |
				       (populate ? MAP_POPULATE : 0) | flags,
			       -1, 0);
		addr_ = p == MAP_FAILED ? nullptr : static_cast<char *>(p);
	}
	~Mapping()
	{
		if (addr_)
			munmap(addr_, len_);
	}
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;

	char *get() const { return addr_; }
	size_t size() const { return len_; }
	explicit operator bool() const { return addr_ != nullptr; }
	// The caller unmapped or moved it itself.
	void forget() { addr_ = nullptr; }

private:
	size_t len_;
	char *addr_;
};

} // namespace urdma::test
