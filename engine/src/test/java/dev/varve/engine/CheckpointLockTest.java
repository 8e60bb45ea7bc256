package dev.varve.engine;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Lock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The checkpoint lock's write side goes before readers that arrive after it asked: a checkpoint's mark or a snapshot
 * declaration waits for the writes inside, not for every write that comes while it waits (which a bare
 * {@code StampedLock} lets in, so that two writers putting back to back kept a mark waiting for tens of milliseconds).
 * Orderings only, observed through the lock's and the threads' states: no timing.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CheckpointLockTest {
    private final CheckpointLock lock = new CheckpointLock();
    private final Lock read = lock.readLock();
    private final CountDownLatch writerIn = new CountDownLatch(1);
    private final CountDownLatch letWriterGo = new CountDownLatch(1);
    private final AtomicBoolean lateReaderIn = new AtomicBoolean();
    private final AtomicBoolean lateReaderKeptInterrupt = new AtomicBoolean();

    @Test
    void aReaderArrivingWhileAWriterWaitsGoesAfterIt() throws Exception {
        Thread writer = writerWaitingBehindARead();
        assertFalse(read.tryLock(), "a new reader got in while the writer waited for the one inside");
        Thread lateReader = lateReader(false);
        while (lateReader.getState() == Thread.State.RUNNABLE || lateReader.getState() == Thread.State.NEW) Thread.onSpinWait();
        assertFalse(lateReaderIn.get(), "the late reader went before the waiting writer");
        endReadThenWriter(writer, lateReader);
        assertTrue(read.tryLock(), "the lock is free for readers again");
        read.unlock();
    }

    /** An interrupted late reader waits for the writer like any other (a park ends at once for it) and keeps its interrupt. */
    @Test
    void anInterruptedReaderGoesAfterTheWriterAndKeepsItsInterrupt() throws Exception {
        Thread writer = writerWaitingBehindARead();
        Thread lateReader = lateReader(true);
        while (lateReader.getState() != Thread.State.TIMED_WAITING) Thread.onSpinWait();
        assertFalse(lateReaderIn.get(), "the late reader went before the waiting writer");
        endReadThenWriter(writer, lateReader);
        assertTrue(lateReaderKeptInterrupt.get(), "the late reader lost its interrupt");
    }

    @Test
    void readersShareTheLockAndAWriterExcludesThem() {
        read.lock();
        assertTrue(read.tryLock(), "readers share");
        assertFalse(lock.writeLock().tryLock(), "a writer got in beside readers");
        read.unlock();
        read.unlock();
        assertTrue(lock.writeLock().tryLock());
        assertFalse(read.tryLock(), "a reader got in beside the writer");
        lock.writeLock().unlock();
    }

    /** A read held by this thread, and a writer thread waiting for it: returns the writer once it waits. */
    private Thread writerWaitingBehindARead() {
        read.lock();
        Thread writer = new Thread(() -> {
            lock.writeLock().lock();
            try {
                writerIn.countDown();
                letWriterGo.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                lock.writeLock().unlock();
            }
        }, "mark");
        writer.start();
        while (!lock.writerWaiting()) Thread.onSpinWait();
        return writer;
    }

    private Thread lateReader(boolean interrupted) {
        Thread t = new Thread(() -> {
            if (interrupted) Thread.currentThread().interrupt();
            read.lock();
            try {
                lateReaderKeptInterrupt.set(Thread.currentThread().isInterrupted());
                lateReaderIn.set(true);
            } finally {
                read.unlock();
            }
        }, "late-writer");
        t.start();
        return t;
    }

    /** Ends this thread's read: the writer, not the late reader, goes next; then the late reader. */
    private void endReadThenWriter(Thread writer, Thread lateReader) throws InterruptedException {
        read.unlock();
        assertTrue(writerIn.await(30, TimeUnit.SECONDS), "the writer did not get the lock once the read inside ended");
        assertFalse(lateReaderIn.get(), "the late reader got in while the writer held the lock");
        letWriterGo.countDown();
        writer.join();
        lateReader.join();
        assertTrue(lateReaderIn.get());
    }
}
