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
 * Orderings only, observed through the lock's state: no timing.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CheckpointLockTest {
    private final CheckpointLock lock = new CheckpointLock();

    @Test
    void aReaderArrivingWhileAWriterWaitsGoesAfterIt() throws Exception {
        Lock read = lock.readLock();
        read.lock(); // a write already inside
        CountDownLatch writerIn = new CountDownLatch(1);
        CountDownLatch letWriterGo = new CountDownLatch(1);
        Thread writer = new Thread(() -> {
            lock.writeLock().lock();
            try {
                writerIn.countDown();
                awaitQuietly(letWriterGo);
            } finally {
                lock.writeLock().unlock();
            }
        }, "mark");
        writer.start();
        while (!lock.writerWaiting()) Thread.onSpinWait();

        assertFalse(read.tryLock(), "a new reader got in while the writer waited for the one inside");
        AtomicBoolean lateReaderIn = new AtomicBoolean();
        Thread lateReader = new Thread(() -> {
            read.lock();
            try {
                lateReaderIn.set(true);
            } finally {
                read.unlock();
            }
        }, "late-writer");
        lateReader.start();
        while (lateReader.getState() == Thread.State.RUNNABLE || lateReader.getState() == Thread.State.NEW) Thread.onSpinWait();
        assertFalse(lateReaderIn.get(), "the late reader went before the waiting writer");

        read.unlock(); // the write inside ends: the writer, not the late reader, is next
        assertTrue(writerIn.await(30, TimeUnit.SECONDS), "the writer did not get the lock once the read inside ended");
        assertFalse(lateReaderIn.get(), "the late reader got in while the writer held the lock");
        letWriterGo.countDown();
        lateReader.join();
        writer.join();
        assertTrue(lateReaderIn.get());
        assertTrue(read.tryLock(), "the lock is free for readers again");
        read.unlock();
    }

    @Test
    void readersShareTheLockAndAWriterExcludesThem() {
        Lock read = lock.readLock();
        read.lock();
        assertTrue(read.tryLock(), "readers share");
        assertFalse(lock.writeLock().tryLock(), "a writer got in beside readers");
        read.unlock();
        read.unlock();
        assertTrue(lock.writeLock().tryLock());
        assertFalse(read.tryLock(), "a reader got in beside the writer");
        lock.writeLock().unlock();
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
