// An AF_UNIX SOCK_STREAM socket pair as hackbench uses it (net/unix/af_unix.c of Linux v6.x, reduced to the
// blocking send and receive of small messages): the sender's sk_wmem_alloc against sk_sndbuf, the receiver's
// locked sk_receive_queue, and the two sockets' wait queues.
#pragma once

#include <cstdint>

#include "kernel/sched/sched.h"

namespace tlbsim::kernel {

// net.core.wmem_default on Linux: 212992 bytes (SK_WMEM_MAX, 256 sk_buffs' worth of truesize on 64-bit).
inline constexpr std::int64_t kUnixSndbuf = 212992;
// SKB_TRUESIZE of a 100-byte unix stream message on x86-64: the data head is kmalloc'd with the skb_shared_info
// (SKB_DATA_ALIGN(100) + 320 = 448 bytes, from kmalloc-512) plus the sk_buff itself (SKB_DATA_ALIGN(232) = 256).
// A derived size, used only for sndbuf accounting (docs/model.md).
inline constexpr std::int64_t kSkbTruesize100 = 512 + 256;

struct UnixStreamPair {
  UnixStreamPair(hw::CoherenceModel& model, SpinlockKind kind)
      : peer_lock(model, "unix.sk_receive_queue.lock", kind),
        qlen{0, model.add_line("unix.sk_receive_queue")},
        sk_wmem_alloc{0, model.add_line("unix.sk_wmem_alloc")},
        rd_wait(model, "unix.rd_wait", kind),
        wr_wait(model, "unix.wr_wait", kind) {}
  Spinlock peer_lock;                      // unix_state_lock(other) and the receive queue's lock, as one
  hw::Shared<int> qlen;                    // messages in the receiver's sk_receive_queue
  hw::Shared<std::int64_t> sk_wmem_alloc;  // bytes the sending socket has in flight (truesize)
  WaitQueue rd_wait;                       // the receiving socket's sk_sleep (unix_stream_data_wait)
  WaitQueue wr_wait;                       // the sending socket's sk_sleep (sock_wait_for_wmem)
};

// unix_stream_sendmsg of one message: sock_alloc_send_pskb (sleeping while sk_wmem_alloc >= sk_sndbuf), queue it
// on the peer under its lock, then sk_data_ready wakes the reader.
sim::Task<void> unix_stream_sendmsg(Sched& s, TaskStruct& t, UnixStreamPair& p, std::int64_t truesize);
// unix_stream_recvmsg of one message: sleep while the queue is empty, dequeue, consume_skb -> sock_wfree, which
// wakes writers once the socket is writable again (unix_write_space: in-flight <= a quarter of sndbuf).
sim::Task<void> unix_stream_recvmsg(Sched& s, TaskStruct& t, UnixStreamPair& p, std::int64_t truesize);

}  // namespace tlbsim::kernel
