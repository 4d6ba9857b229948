// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Open MPI over UCX on an RDMA device: point-to-point messages of several
 * sizes (eager and rendezvous) with patterns each rank can recompute, and
 * allreduces whose sums are known.  Exits 0 and prints "OK" on rank 0 only
 * if every byte and every sum is right on every rank.
 *
 *   mpirun -np 2 --mca pml ucx -x UCX_NET_DEVICES=urdma0:1 \
 *       -x UCX_TLS=rc_verbs,ud_verbs,self build/tests/urdma_mpi_check
 */
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

uint8_t pattern(int from, size_t size, size_t i)
{
	return uint8_t((i * 131u) ^ (size * 7u) ^ unsigned(from * 29));
}

// Rank 0 and rank 1 send each size to each other; returns bad bytes.
long ping_pong(int rank, size_t size)
{
	std::vector<uint8_t> out(size), in(size, 0xee);
	for (size_t i = 0; i < size; i++)
		out[i] = pattern(rank, size, i);
	const int peer = rank ^ 1;
	MPI_Sendrecv(out.data(), int(size), MPI_BYTE, peer, int(size & 0x7fff),
		     in.data(), int(size), MPI_BYTE, peer, int(size & 0x7fff),
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	long bad = 0;
	for (size_t i = 0; i < size; i++)
		bad += in[i] != pattern(peer, size, i);
	return bad;
}

// Allreduce of n doubles: element i of rank r is r * n + i; the sum over
// ranks is exact in doubles for these sizes.
long allreduce(int rank, int ranks, size_t n)
{
	std::vector<double> v(n), sum(n);
	for (size_t i = 0; i < n; i++)
		v[i] = double(rank) * double(n) + double(i);
	MPI_Allreduce(v.data(), sum.data(), int(n), MPI_DOUBLE, MPI_SUM,
		      MPI_COMM_WORLD);
	long bad = 0;
	for (size_t i = 0; i < n; i++) {
		const double want = double(n) * double(ranks) * (ranks - 1) / 2 +
				    double(ranks) * double(i);
		bad += sum[i] != want;
	}
	return bad;
}

} // namespace

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank = 0, ranks = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	if (ranks % 2) {
		if (!rank)
			std::fprintf(stderr, "needs an even number of ranks\n");
		MPI_Finalize();
		return 2;
	}

	long bad = 0;
	for (size_t size : { size_t(1), size_t(64), size_t(4096),
			     size_t(65536), size_t(1) << 20 }) {
		const long b = ping_pong(rank, size);
		if (b)
			std::fprintf(stderr, "rank %d: %ld bad bytes in %zu\n",
				     rank, b, size);
		bad += b;
	}
	for (size_t n : { size_t(1), size_t(1000), size_t(1) << 18 }) {
		const long b = allreduce(rank, ranks, n);
		if (b)
			std::fprintf(stderr, "rank %d: %ld bad sums of %zu\n",
				     rank, b, n);
		bad += b;
	}
	long total = 0;
	MPI_Reduce(&bad, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (!rank)
		std::printf(total ? "FAILED: %ld bad\n" : "OK\n", total);
	MPI_Finalize();
	return total ? 1 : 0;
}
