package dev.varve.engine;

import dev.varve.core.tree.BPlusTree;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * One partition's B+tree and its lock: one writer at a time, readers share; readers and writers of other
 * partitions never wait for it.
 *
 * <p>Design note: gets take no lock at all while no writer holds the partition. The write lock's holds are counted
 * ({@link #lockWrites}, odd while one is held, a seqlock over the lock): a get takes an even count, reads the tree
 * without pins ({@link BPlusTree#getUnsettled}) and keeps what it read only if the count is still the same, else
 * reads again under the read lock. The read lock's acquire and release each write its count, a line every reader of
 * the partition shares: with two threads getting, those lines moved between the cores on every get.
 */
final class PartitionHandle {
    private static final VarHandle WRITES;

    static {
        try {
            WRITES = MethodHandles.lookup().findVarHandle(PartitionHandle.class, "writes", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final int fileId;
    final int index;
    /** The table's name, for messages. */
    final String table;
    final BPlusTree tree;
    /** Readers take its read side; writers take the write side through {@link #lockWrites}, never directly. */
    final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    /** Write-lock holds begun and ended: odd while a writer holds the partition. Changed by the holder only. */
    @SuppressWarnings("unused") // through WRITES
    private volatile long writes;

    PartitionHandle(int fileId, int index, String table, BPlusTree tree) {
        this.fileId = fileId;
        this.index = index;
        this.table = table;
        this.tree = tree;
    }

    /** Takes the write lock; the count turns odd before the holder changes a page. */
    void lockWrites() {
        lock.writeLock().lock();
        if (lock.getWriteHoldCount() == 1) {
            WRITES.setOpaque(this, (long) WRITES.getOpaque(this) + 1);
            VarHandle.storeStoreFence(); // the odd count is seen before any change the holder makes
        }
    }

    /** Releases the write lock; the count turns even after every change the holder made. */
    void unlockWrites() {
        if (lock.getWriteHoldCount() == 1) WRITES.setRelease(this, (long) WRITES.getOpaque(this) + 1);
        lock.writeLock().unlock();
    }

    /** The count before a read without the lock, or -1 while a writer holds the partition (the reader locks then). */
    long writesSettled() {
        long w = (long) WRITES.getAcquire(this);
        return (w & 1) == 0 ? w : -1;
    }

    /** Whether no writer took the partition since {@link #writesSettled} gave {@code settled}: what was read stands. */
    boolean noWritesSince(long settled) {
        VarHandle.acquireFence(); // the read's loads come before the count's, as in StampedLock.validate
        return (long) WRITES.getAcquire(this) == settled;
    }
}
