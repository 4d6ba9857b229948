// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// What echo_server and echo_client agree on: messages of at most
// kMaxMessage bytes, each echoed back; an empty message ends the session.
#pragma once

#include <cstddef>
#include <string>

namespace urdma::examples {

constexpr const char kDefaultPort[] = "7481";
constexpr size_t kMaxMessage = 256;

// Message I: its number, then letters, 16 to kMaxMessage bytes long.
inline std::string echo_message(long i)
{
	std::string m = "echo message " + std::to_string(i) + ":";
	const size_t len = 16 + size_t(i) * 37 % (kMaxMessage - 15);
	for (size_t j = 0; m.size() < len; j++)
		m += char('a' + (i + long(j)) % 26);
	return m;
}

}  // namespace urdma::examples
