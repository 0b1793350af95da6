//! The sender: the task of a pair that only answers. One way, it is woken by
//! the receiver's hand-over and stamps and posts at once; round trip, it is
//! the echoing peer that posts each wake-up straight back. A thread, or a
//! forked child (`process`): the code here is allocation-free for that.

use super::plan::Mode;
use super::state::{TaskContext, set_up_current_task, sleep_until_or_stop};
use crate::ipc::Wake;
use crate::rt::clock::{Deadline, monotonic_ns};
use crate::rt::sched;
use std::sync::atomic::Ordering;

/// Blocks on its channel and answers each wake-up, until stopped. It needs
/// no loop count: after its last sample the receiver releases it with an
/// interrupt instead of another wake-up.
pub(super) fn sender_task(ctx: &TaskContext) {
    let sender = &*ctx.live().sender;
    sender.tid.store(sched::current_tid(), Ordering::Relaxed);
    let pair = ctx.pair();
    let setup = set_up_current_task(pair.sender_cpu, pair);
    sender.cpu.store(
        pair.sender_cpu.unwrap_or_else(sched::current_cpu),
        Ordering::Relaxed,
    );
    // Before reporting ready: the receiver may post as soon as the run starts.
    ctx.sender_in().attach_waiter();
    let failed = setup.is_err();
    sender.setup.report(setup);
    if !failed {
        answer_until_stopped(ctx);
    }
    sender.cpu.store(
        pair.sender_cpu.unwrap_or_else(sched::current_cpu),
        Ordering::Relaxed,
    );
    sender.done.store(true, Ordering::Release);
}

/// The sender's loop: wait, then stamp and post (one way) or echo (round trip).
fn answer_until_stopped(ctx: &TaskContext) {
    let sender = &*ctx.live().sender;
    let input = ctx.sender_in();
    let channels = ctx.channels();
    let flags = &*ctx.state.flags;
    let mut sent = 0u64;
    loop {
        let stamp = match input.wait(None) {
            Ok(Wake::Message(stamp)) => stamp,
            Ok(Wake::TimedOut) => continue,
            Ok(Wake::Interrupted) => break,
            Err(e) => {
                sender.error.store(e);
                break;
            }
        };
        let posted = match ctx.plan.mode {
            // Woken by the hand-over: stamp and send at once.
            Mode::OneWay => {
                if let Some(delay) = ctx.plan.forced_send_delay {
                    sleep_until_or_stop(Deadline::after(delay).ns(), flags);
                }
                if flags.stop.load(Ordering::Relaxed) {
                    break;
                }
                channels.test.post(monotonic_ns())
            }
            Mode::RoundTrip => channels.sync.post(stamp),
        };
        if let Err(e) = posted {
            sender.error.store(e);
            break;
        }
        sent += 1;
        sender.sent.store(sent, Ordering::Relaxed);
    }
}
