// Models the blocking paths of net/unix/af_unix.c (unix_stream_sendmsg, unix_stream_read_generic,
// unix_write_space) and net/core/sock.c (sock_alloc_send_pskb, sock_wfree) of Linux v6.x for one-skb messages.
#include "net/unix/af_unix.h"

namespace tlbsim::kernel {

sim::Task<void> unix_stream_sendmsg(Sched& s, TaskStruct& t, UnixStreamPair& p, std::int64_t truesize) {
  hw::Memory& mem = s.k.mem();
  co_await s.cpu_of(t).cpu.delay(s.k.machine().kernel.syscall);
  // sock_alloc_send_pskb: wait for sndbuf space, then charge the skb to the sending socket.
  for (;;) {
    const std::int64_t in_flight = co_await mem.read(s.cpu_of(t).cpu, p.sk_wmem_alloc);
    if (in_flight < kUnixSndbuf) break;
    co_await s.wait_event(t, p.wr_wait, [&p] { return p.sk_wmem_alloc.value < kUnixSndbuf; });
  }
  PerCpu& pc = s.cpu_of(t);
  co_await mem.rmw(pc.cpu, p.sk_wmem_alloc, [truesize](std::int64_t v) { return v + truesize; });  // skb_set_owner_w
  // The rest of the write: vfs_write and sock_write_iter, alloc_skb_with_frags with its memcg hooks, scm_send,
  // skb_copy_datagram_from_iter (machine [kernel] unix_sendmsg).
  co_await pc.cpu.delay(s.k.machine().kernel.unix_sendmsg);
  co_await p.peer_lock.lock(mem, pc.cpu);  // unix_state_lock(other); skb_queue_tail
  co_await mem.rmw(pc.cpu, p.qlen, [](int q) { return q + 1; });
  co_await p.peer_lock.unlock(mem, pc.cpu);
  // other->sk_data_ready (sock_def_readable): wake only when wq_has_sleeper, with wake_up_interruptible_sync_poll.
  if (!p.rd_wait.empty()) co_await s.wake_up(t, p.rd_wait, WF_SYNC);
}

sim::Task<void> unix_stream_recvmsg(Sched& s, TaskStruct& t, UnixStreamPair& p, std::int64_t truesize) {
  hw::Memory& mem = s.k.mem();
  co_await s.cpu_of(t).cpu.delay(s.k.machine().kernel.syscall);
  for (;;) {
    PerCpu& pc = s.cpu_of(t);
    co_await p.peer_lock.lock(mem, pc.cpu);
    const int have = co_await mem.read(pc.cpu, p.qlen);
    if (have > 0) {
      co_await mem.rmw(pc.cpu, p.qlen, [](int q) { return q - 1; });  // skb_unlink
      co_await p.peer_lock.unlock(mem, pc.cpu);
      break;
    }
    co_await p.peer_lock.unlock(mem, pc.cpu);
    co_await s.wait_event(t, p.rd_wait, [&p] { return p.qlen.value > 0; });  // unix_stream_data_wait
  }
  // The rest of the read: vfs_read down to unix_stream_read_generic, the iolock mutex, the copy to user
  // (unix_stream_read_actor), scm_recv, and consume_skb's frees with their memcg hooks (machine [kernel] unix_recvmsg).
  PerCpu& pc = s.cpu_of(t);
  co_await pc.cpu.delay(s.k.machine().kernel.unix_recvmsg);
  // consume_skb -> sock_wfree: uncharge the sender, and unix_write_space wakes writers once writable.
  const std::int64_t before =
      co_await mem.rmw(pc.cpu, p.sk_wmem_alloc, [truesize](std::int64_t v) { return v - truesize; });
  if (((before - truesize) << 2) <= kUnixSndbuf && !p.wr_wait.empty()) {
    co_await s.wake_up(t, p.wr_wait, WF_SYNC);  // unix_write_space: wake_up_interruptible_sync_poll
  }
}

}  // namespace tlbsim::kernel
