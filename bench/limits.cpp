// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// urdma_limits: what this machine itself allows, measured next to the RDMA
// benchmarks in the same boot (make bench).
//
//   urdma_limits memcpy SIZE...   copy bandwidth, MB/s (10^6 bytes/s): the
//                                 fastest of libc memcpy, rep movsq, rep movsb
//                                 and the loop the kernel's memcpy() runs
//                                 without FSRM (also reported on its own)
//   urdma_limits pingpong SIZE... cross-process shared-memory ping-pong:
//                                 one-way latency in usec (half a round trip)
//   urdma_limits syscall 0        the cost of a system call that does
//                                 nothing (getppid), in usec: what every
//                                 kick, and every post of rxe or siw, pays
//
// Each SIZE prints one JSON object per line:
//   {"test":"memcpy","size":65536,"mbps":12345.6,"copy":"rep_movsq",
//    "kernel_style_mbps":9876.5}
//   {"test":"pingpong","size":2,"usec":0.41,"iters":N}
//   {"test":"syscall","size":0,"usec":0.1,"iters":N}
// memcpy copies the same SIZE bytes between two buffers again and again, as
// perftest moves the same buffer; the ping-pong copies SIZE bytes into a
// shared buffer and flips a flag, and the other process copies them out and
// answers the same way, which is the least a one-way message between two
// processes of this machine costs.
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0)
{
	return std::chrono::duration<double>(Clock::now() - t0).count();
}

// An anonymous mapping, shared with children when asked; unmapped on scope exit.
class Mapping {
public:
	Mapping(size_t len, bool shared)
		: len_(len),
		  p_(mmap(nullptr, len, PROT_READ | PROT_WRITE,
			  (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0))
	{
	}
	~Mapping()
	{
		if (ok())
			munmap(p_, len_);
	}
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;
	bool ok() const { return p_ != MAP_FAILED; }
	char *data() const { return static_cast<char *>(p_); }

private:
	size_t len_;
	void *p_;
};

// Keeps the compiler from dropping a copy whose result nobody reads.
void clobber(void *p)
{
	asm volatile("" : : "r"(p) : "memory");
}

// The copies measured; the fastest is the limit.  Under QEMU TCG each is
// emulated instruction by instruction, and which one wins depends on the
// size (glibc's vector memcpy, the string instructions, or a plain loop).
void copy_rep_movsq(char *dst, const char *src, size_t n)
{
	size_t q = n / 8;

	asm volatile("rep movsq" : "+D"(dst), "+S"(src), "+c"(q) : : "memory");
	std::memcpy(dst, src, n % 8);
}

void copy_rep_movsb(char *dst, const char *src, size_t n)
{
	asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

void copy_libc(char *dst, const char *src, size_t n)
{
	std::memcpy(dst, src, n);
}

// The loop the x86-64 kernel's memcpy() runs on a CPU without FSRM
// (memcpy_orig in arch/x86/lib/memcpy_64.S: four 8-byte loads and stores
// per iteration), as QEMU's TCG CPU models are: what urdma's engine copies
// with there.
void copy_kernel_style(char *dst, const char *src, size_t n)
{
	auto *d = reinterpret_cast<unsigned long *>(dst);
	auto *s = reinterpret_cast<const unsigned long *>(src);
	size_t q = n / 32;

	for (size_t i = 0; i < q; i++) {
		unsigned long a, b, c, e;

		asm volatile("movq 0(%4), %0\n\tmovq 8(%4), %1\n\t"
			     "movq 16(%4), %2\n\tmovq 24(%4), %3"
			     : "=&r"(a), "=&r"(b), "=&r"(c), "=&r"(e)
			     : "r"(s) : "memory");
		asm volatile("movq %0, 0(%4)\n\tmovq %1, 8(%4)\n\t"
			     "movq %2, 16(%4)\n\tmovq %3, 24(%4)"
			     : : "r"(a), "r"(b), "r"(c), "r"(e), "r"(d)
			     : "memory");
		d += 4;
		s += 4;
	}
	std::memcpy(d, s, n % 32);
}

struct CopyFn {
	const char *name;
	void (*fn)(char *, const char *, size_t);
};

const CopyFn copies[] = {
	{ "memcpy", copy_libc },
	{ "rep_movsq", copy_rep_movsq },
	{ "rep_movsb", copy_rep_movsb },
	{ "kernel_style", copy_kernel_style },
};

double copy_mbps(const CopyFn &c, char *dst, const char *src, size_t size)
{
	// About 0.2 s per size and copy, at least 16 copies.
	size_t iters = 16, done = 0;
	double secs = 0;
	auto t0 = Clock::now();

	while (secs < 0.2) {
		for (size_t i = 0; i < iters; i++) {
			c.fn(dst, src, size);
			clobber(dst);
		}
		done += iters;
		iters *= 2;
		secs = seconds_since(t0);
	}
	if (std::memcmp(dst, src, size)) {
		std::fprintf(stderr, "memcpy: %s copied wrong bytes\n", c.name);
		return -1;
	}
	std::memset(dst, 0, size);
	return double(size) * done / secs / 1e6;
}

// The fastest copy for @size, and its MB/s; nullptr if a copy was wrong.
// @kstyle, if set, gets the kernel-style loop's MB/s (one of the copies).
const CopyFn *fastest_copy(size_t size, double *mbps, double *kstyle = nullptr)
{
	Mapping src(size, false), dst(size, false);
	const CopyFn *best = nullptr;

	*mbps = 0;
	if (!src.ok() || !dst.ok()) {
		std::perror("mmap");
		return nullptr;
	}
	std::memset(src.data(), 0x5a, size);
	std::memset(dst.data(), 0, size);
	for (const CopyFn &c : copies) {
		double v = copy_mbps(c, dst.data(), src.data(), size);

		if (v < 0)
			return nullptr;
		if (kstyle && c.fn == copy_kernel_style)
			*kstyle = v;
		if (v > *mbps) {
			*mbps = v;
			best = &c;
		}
	}
	return best;
}

int bench_memcpy(size_t size)
{
	double best, kstyle = 0;
	const CopyFn *c = fastest_copy(size, &best, &kstyle);

	if (!c)
		return 1;
	std::printf("{\"test\":\"memcpy\",\"size\":%zu,\"mbps\":%.1f,\"copy\":\"%s\","
		    "\"kernel_style_mbps\":%.1f}\n",
		    size, best, c->name, kstyle);
	return 0;
}

struct Shared {
	std::atomic<unsigned> turn; // odd: the child's turn; even: the parent's
	char pad[60];
};

// The ping-pong copies with the fastest copy for its size: under TCG
// glibc's vector memcpy of 64 KiB runs at a tenth of the best.
int bench_pingpong(size_t size, size_t iters)
{
	static_assert(std::atomic<unsigned>::is_always_lock_free,
		      "the ping-pong needs a lock-free flag in shared memory");
	size_t len = sizeof(Shared) + 2 * size;
	Mapping shm(len, true);
	Mapping mine(size ? size : 1, false);

	if (!shm.ok() || !mine.ok()) {
		std::perror("mmap");
		return 1;
	}
	double mbps;
	const CopyFn *c = fastest_copy(size ? size : 1, &mbps);
	if (!c)
		return 1;
	auto copy = c->fn;
	auto *sh = new (shm.data()) Shared();
	char *to_child = shm.data() + sizeof(Shared);
	char *to_parent = to_child + size;
	std::memset(mine.data(), 1, size);

	pid_t pid = fork();
	if (pid < 0) {
		std::perror("fork");
		return 1;
	}
	if (pid == 0) {
		for (size_t i = 0; i < iters; i++) {
			unsigned want = 2 * i + 1;
			while (sh->turn.load(std::memory_order_acquire) != want)
				;
			copy(mine.data(), to_child, size);
			copy(to_parent, mine.data(), size);
			sh->turn.store(want + 1, std::memory_order_release);
		}
		_exit(0);
	}
	auto t0 = Clock::now();
	for (size_t i = 0; i < iters; i++) {
		copy(to_child, mine.data(), size);
		sh->turn.store(2 * i + 1, std::memory_order_release);
		while (sh->turn.load(std::memory_order_acquire) != 2 * i + 2)
			;
		copy(mine.data(), to_parent, size);
	}
	double secs = seconds_since(t0);
	int status = 0;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		std::fprintf(stderr, "pingpong: child failed\n");
		return 1;
	}
	std::printf("{\"test\":\"pingpong\",\"size\":%zu,\"usec\":%.3f,\"iters\":%zu,"
		    "\"copy\":\"%s\"}\n",
		    size, secs / iters / 2 * 1e6, iters, c->name);
	return 0;
}

int usage()
{
	std::fprintf(stderr,
		     "usage: urdma_limits memcpy|pingpong SIZE... [-n ITERS]\n");
	return 2;
}

} // namespace

int bench_syscall(size_t iters)
{
	auto t0 = Clock::now();
	for (size_t i = 0; i < iters; i++)
		(void)syscall(SYS_getppid);	// no libc caching
	double secs = seconds_since(t0);

	std::printf("{\"test\":\"syscall\",\"size\":0,\"usec\":%.3f,"
		    "\"iters\":%zu}\n", secs / iters * 1e6, iters);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return usage();
	std::string what = argv[1];
	size_t iters = 20000;
	std::vector<size_t> sizes;

	for (int i = 2; i < argc; i++) {
		char *end = nullptr;

		if (!std::strcmp(argv[i], "-n") && i + 1 < argc) {
			iters = std::strtoull(argv[++i], &end, 0);
			if (!iters || *end)
				return usage();
			continue;
		}
		unsigned long long v = std::strtoull(argv[i], &end, 0);
		if (*end || v > (1ULL << 30))
			return usage();
		sizes.push_back(v);
	}
	for (size_t s : sizes) {
		int rc = what == "memcpy"     ? bench_memcpy(s ? s : 1) :
			 what == "pingpong"   ? bench_pingpong(s, iters) :
			 what == "syscall"    ? bench_syscall(iters) :
						usage();
		if (rc)
			return rc;
		std::fflush(stdout);
	}
	return 0;
}
