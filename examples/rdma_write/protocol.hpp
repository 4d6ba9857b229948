// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// What write_server and write_client agree on: the private data of the
// server's rdma_accept (where to write), and the bytes the client writes.
#pragma once

#include <endian.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace urdma::examples {

constexpr const char kDefaultPort[] = "7480";
constexpr const char kMessage[] = "hello from urdma over RDMA WRITE";

// The server's buffer, in network byte order.
struct __attribute__((packed)) RemoteBuffer {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};
static_assert(sizeof(RemoteBuffer) == 16, "RemoteBuffer is on the wire");

// The message, then a pattern that depends on each byte's offset.
inline uint8_t expected_byte(size_t i)
{
	constexpr size_t n = sizeof(kMessage) - 1;
	return i < n ? uint8_t(kMessage[i]) : uint8_t(i * 7 + i / 256 + 1);
}

inline void fill(uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = expected_byte(i);
}

}  // namespace urdma::examples
