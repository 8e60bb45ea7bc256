package dev.varve.snapshot;

import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * The archive's two locks, and the order between them.
 *
 * <p>The <b>state lock</b> ({@link #lock}) guards capture numbering, the pending queue, the declarations, the ranked
 * extents and the open views' tables. The capture hook takes it on the writer's path, under the page's write latch,
 * so it is held for work in memory only: no fsync, no wait for the archiver, no page copy happens under it (recovery
 * cuts the files under it, before capture is turned on).
 *
 * <p>The <b>append gate</b> ({@link #lockAppends}) keeps the archive's logs still while the checkpoint makes them
 * durable. The files' own monitors are held through an fsync, so whoever appends to a log or reads one under the
 * state lock — the archiver's steps, declarations, rank changes, drops, a view catching up with the Maplog — takes the
 * gate first; the checkpoint's flush and reclamation hold the gate alone while they fsync. Capture never takes it:
 * a capture never waits for an fsync, however long the disk takes. Every drop is made holding the gate, so a rank
 * change that holds it from finding its snapshot live until it is raised (its WAL record appended meanwhile, the
 * state lock not held) never logs a raise that is then refused.
 *
 * <p>Order: the gate, then the state lock, then the files' monitors ({@code Pagelog}, {@code MaplogFile}); never the
 * gate while holding the state lock.
 *
 * <p>A thread that finds the state lock taken spins for up to {@link #SPIN_NANOS} before it parks. The lock is held
 * for memory work only, so the holder usually lets go sooner than a park and its wake-up take: on a 2-vCPU VM a
 * writer slept 11-17% of its time in thousands of parks a second on it (mostly behind the archiver's mappings of a
 * batch), each park and wake-up some 60-75 µs; spinning first halved its sleeps, and after every batch gave 4-7% more
 * batches in four alternating pairs (docs/performance.md, The capture path's parks on the state lock).
 */
final class ArchiveLock {
    private final ReentrantLock state = new ReentrantLock();
    private final ReentrantLock appends = new ReentrantLock();

    /** How long a thread spins for the state lock before it parks. */
    private static final long SPIN_NANOS = 20_000;
    /** Spins between two reads of the clock (a spin took some 25 ns on the 2-vCPU AMD EPYC VM). */
    private static final int SPINS_PER_CLOCK_READ = 32;

    /** Takes the state lock: at once when free, else spinning for a while, then parking. */
    void lock() {
        if (state.tryLock() || spinFor()) return;
        state.lock();
    }

    /** Spins for up to {@link #SPIN_NANOS} while the state lock is taken; true when it took the lock meanwhile. */
    private boolean spinFor() {
        long deadline = System.nanoTime() + SPIN_NANOS;
        do {
            for (int i = 0; i < SPINS_PER_CLOCK_READ; i++) {
                Thread.onSpinWait();
                if (!state.isLocked() && state.tryLock()) return true;
            }
        } while (System.nanoTime() - deadline < 0);
        return false;
    }

    void unlock() {
        state.unlock();
    }

    /** What {@code read} returns, read holding the state lock. */
    <T> T read(Supplier<T> read) {
        lock();
        try {
            return read.get();
        } finally {
            unlock();
        }
    }

    /** Takes the append gate; refused under the state lock, which would make a capture wait behind an fsync. */
    void lockAppends() {
        if (state.isHeldByCurrentThread()) throw new IllegalStateException("the archive's append gate is taken after its state lock, not under it");
        appends.lock();
    }

    void unlockAppends() {
        appends.unlock();
    }

    /** Takes the gate, then the state lock: to append to a log, or read one, under the state lock. */
    void lockWithAppends() {
        lockAppends();
        lock();
    }

    void unlockWithAppends() {
        state.unlock();
        appends.unlock();
    }
}
