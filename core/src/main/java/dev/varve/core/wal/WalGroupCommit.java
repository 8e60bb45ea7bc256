package dev.varve.core.wal;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * Group commit: who forces the WAL, and who waits for whom. One thread at a time forces (it holds the force lock) and
 * its force covers every record appended before it began; the threads that need a record durable meanwhile do not
 * queue on the lock (a queue wakes its threads one at a time, each after the previous one ran) but park, and are all
 * unparked when it ends, so every thread the force covered wakes at once, and the first one still uncovered forces the
 * next group.
 *
 * <p><b>Gathering.</b> Left at that, groups alternate in size: the writers a force covered wake together, and the
 * first of them back with its next record finds no force running and forces at once — for itself alone — while the
 * rest append during that force and make the group after it. Eight FSYNC writers then get four puts per fsync, not
 * eight. So a thread that takes the lock to force first waits, yielding its core, until as many commits have arrived
 * since the last force ended as that force covered (the writers it woke are back), for at most as long as that force
 * took: a bound that keeps the wait within the fsync it saves, on a fast device and a slow one. A lone writer (the
 * last force covered one) never waits; a writer that stopped costs one bounded wait, after which the group is smaller.
 * This is PostgreSQL's {@code commit_delay}, with the delay and the sibling count measured instead of configured.
 */
final class WalGroupCommit {
    /** Longest gathering wait, whatever a force took: a stalled device must not turn into a stalled commit. */
    private static final long MAX_GATHER_NANOS = 1_000_000;

    private final ReentrantLock forceLock = new ReentrantLock();
    /**
     * Threads parked until the force in progress ends; every one is unparked when the force lock is released. Each is
     * woken directly: a monitor's notifyAll would hand its waiters the monitor one after another, a context switch
     * each, which for seven writers took longer than the fsync they waited for.
     */
    private final Queue<Thread> waiters = new ConcurrentLinkedQueue<>();
    /** Every record below this LSN is durable. Only grows. */
    private final AtomicLong durableLsn = new AtomicLong();
    private final boolean gather;
    /** Threads inside {@link #await}: committing writers and forcing callers. */
    private final AtomicInteger committing = new AtomicInteger();
    /** Calls of {@link #await} so far. */
    private final AtomicLong arrivals = new AtomicLong();
    /** {@link #arrivals} when the last force ended. */
    private volatile long arrivalsAtLastForce;
    /** Threads the last force covered: the group the next force waits for. */
    private volatile int lastGroup = 1;
    private volatile long lastForceNanos;

    /**
     * @param gather wait for the group before forcing (the WAL's FSYNC mode, where every commit forces); otherwise
     *               the only forcing callers are the checkpointer and a background flusher, which have nobody to wait for
     */
    WalGroupCommit(long durable, boolean gather) {
        this.durableLsn.set(durable);
        this.gather = gather;
    }

    /** Every record below this LSN is durable against power loss. */
    long durableLsn() {
        return durableLsn.get();
    }

    /** Records that everything below {@code lsn} is durable; the caller holds the force lock or appends nothing. */
    void durableUpTo(long lsn) {
        durableLsn.accumulateAndGet(lsn, Math::max);
    }

    /**
     * Returns once every record below {@code upTo} is durable, forcing with {@code forceAppended} (which runs under the
     * force lock, forces everything appended so far and returns the LSN it made durable) when nobody else is.
     */
    void await(long upTo, LongSupplier forceAppended) {
        boolean interrupted = false;
        arrivals.incrementAndGet();
        committing.incrementAndGet();
        try {
            while (durableLsn.get() < upTo) {
                if (forceLock.tryLock()) {
                    try {
                        if (gather) gatherGroup();
                        long arrivedBefore = arrivals.get();
                        long start = System.nanoTime();
                        durableUpTo(forceAppended.getAsLong());
                        lastForceNanos = System.nanoTime() - start;
                        long arrivedAfter = arrivals.get();
                        // who was committing before the force began had appended: the force covered them
                        lastGroup = committing.get() - (int) (arrivedAfter - arrivedBefore);
                        arrivalsAtLastForce = arrivedAfter;
                    } finally {
                        unlock();
                    }
                    continue;
                }
                Thread me = Thread.currentThread();
                waiters.add(me);
                // unlock unparks every registered waiter after unlocking, so a holder seen here cannot be missed
                while (forceLock.isLocked() && durableLsn.get() < upTo) {
                    LockSupport.park(this);
                    // a commit is not abandoned half-way; the interrupt is kept for the caller
                    if (Thread.interrupted()) interrupted = true;
                }
                waiters.remove(me);
            }
        } finally {
            committing.decrementAndGet();
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    /** Waits, bounded, until the writers the last force woke are committing again. Holds the force lock. */
    private void gatherGroup() {
        int group = lastGroup;
        if (group <= 1) return;
        long deadline = System.nanoTime() + Math.min(lastForceNanos, MAX_GATHER_NANOS);
        while (arrivals.get() - arrivalsAtLastForce < group && System.nanoTime() - deadline < 0) {
            Thread.yield(); // they need a core to finish their records more than this thread needs to look again
        }
    }

    /** Takes the force lock if no thread holds it: for a thread that must not wait for a force. */
    boolean tryLock() {
        return forceLock.tryLock();
    }

    /** Takes the force lock, for a step that must not run beside a force (a segment switch, closing). */
    void lock() {
        forceLock.lock();
    }

    /** Releases the force lock and wakes the threads waiting for a force to finish. */
    void unlock() {
        forceLock.unlock();
        for (Thread t : waiters) LockSupport.unpark(t);
    }
}
