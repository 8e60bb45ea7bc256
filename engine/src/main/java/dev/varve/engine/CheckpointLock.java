package dev.varve.engine;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.StampedLock;

/**
 * The checkpoint lock (see the package documentation for its place among the store's locks): a {@link StampedLock}'s
 * read and write views, with the write side first in line. Every logged write takes the read side for its
 * append-and-apply; a checkpoint's mark, a snapshot declaration and close take the write side, and are meant to wait
 * only for the writes already inside.
 *
 * <p>A {@code StampedLock} lets a reader in whenever no thread <em>holds</em> the write side, even while one waits
 * for it: with two threads putting back to back, the read count seldom falls to zero, and a checkpoint's mark waited
 * tens to hundreds of milliseconds for the write side (two writers on two cores, physical WAL records: 200 ms a
 * checkpoint on average) — a mark, or a {@code snapshotNow()}, late by as much. Here a thread that asks for the write
 * side says so first, and a reader that sees it waits until the writer has it (then queues behind it in the
 * {@code StampedLock}), so the reads inside drain and none enters meanwhile. A reader that looked just before the
 * writer said so gets in; the writer waits for it as for any read already inside, one operation.
 *
 * <p>Not reentrant, as the store's use needs: nothing under either side takes the lock again.
 */
final class CheckpointLock implements ReadWriteLock {
    /** Spins before a waiting reader yields its core, and yields before it parks: the write side is held for microseconds. */
    private static final int SPINS = 64;
    private static final int YIELDS = 16;
    /** A waiting reader's park between looks: a writer waiting long (behind a large batch inside) costs it no core. */
    private static final long PARK_NANOS = 20_000;

    private final StampedLock lock = new StampedLock();
    private final Lock read = lock.asReadLock();
    private final Lock write = lock.asWriteLock();
    /** Threads asking for the write side that do not hold it yet. */
    private final AtomicInteger writersWaiting = new AtomicInteger();
    private final Lock readSide = new ReadSide();
    private final Lock writeSide = new WriteSide();

    @Override
    public Lock readLock() {
        return readSide;
    }

    @Override
    public Lock writeLock() {
        return writeSide;
    }

    /** Whether a thread is waiting for the write side (for tests). */
    boolean writerWaiting() {
        return writersWaiting.get() != 0;
    }

    /**
     * Returns once no writer is waiting. It keeps an interrupt for the caller, as the lock it stands before does,
     * rather than spin on a park that returns at once.
     */
    private void awaitNoWaitingWriter() {
        boolean interrupted = false;
        for (int turn = 0; writersWaiting.get() != 0; turn++) {
            if (turn < SPINS) {
                Thread.onSpinWait();
            } else if (turn < SPINS + YIELDS) {
                Thread.yield(); // on a machine of few cores the writer may need this one
            } else {
                LockSupport.parkNanos(this, PARK_NANOS);
                interrupted |= Thread.interrupted();
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    /** What neither side offers: the store takes the lock with {@code lock()} and {@code tryLock()} only. */
    private abstract static class Side implements Lock {
        @Override
        public void lockInterruptibly() {
            throw new UnsupportedOperationException("the checkpoint lock is taken with lock() or tryLock()");
        }

        @Override
        public boolean tryLock(long time, TimeUnit unit) {
            throw new UnsupportedOperationException("the checkpoint lock is taken with lock() or tryLock()");
        }

        @Override
        public Condition newCondition() {
            throw new UnsupportedOperationException("the checkpoint lock has no conditions");
        }
    }

    private final class ReadSide extends Side {
        @Override
        public void lock() {
            awaitNoWaitingWriter();
            read.lock();
        }

        @Override
        public boolean tryLock() {
            return writersWaiting.get() == 0 && read.tryLock();
        }

        @Override
        public void unlock() {
            read.unlock();
        }
    }

    private final class WriteSide extends Side {
        @Override
        public void lock() {
            writersWaiting.incrementAndGet();
            try {
                write.lock();
            } finally {
                writersWaiting.decrementAndGet(); // readers now queue in the StampedLock until the write side is let go
            }
        }

        @Override
        public boolean tryLock() {
            return write.tryLock();
        }

        @Override
        public void unlock() {
            write.unlock();
        }
    }
}
