package dev.varve.core.wal;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ThreadFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates the next WAL segment's file ahead of time, so a segment switch does not zero-fill and fsync a whole file
 * while every writer waits on the WAL's append lock (and, behind it, on the checkpoint read lock).
 *
 * <p>Design note. The slow part of {@link WalSegment#create} — allocating every block and forcing the header, under
 * the file's temporary name — runs on a short-lived daemon thread once a quarter of the current segment is written
 * ({@link #BEGIN_PAST_PART}); the switch then only maps it. The file keeps its temporary name until the previous segment is durable and sealed (the switch
 * names it under FSYNC, {@link WalSegmentCloser} after it otherwise), so
 * the WAL's on-disk rules do not change: a file with a segment's name still proves every earlier segment durable,
 * and a crash leaves a temporary file that open deletes. A preparation that failed (a full disk) is not reported
 * from the background thread: the switch creates the segment itself, which fails the append naming the file as
 * before, or succeeds if the disk has room again. So does a preparation whose thread the OS refuses
 * ({@code OutOfMemoryError: unable to create native thread}): the append that asked for it must not fail for it,
 * as it has already reserved its place in the segment, and every later record waits for that one to be written.
 */
final class WalSegmentPreparer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WalSegmentPreparer.class);
    /**
     * The next segment is prepared once the current one is past this part of it (a quarter): at half, a writer at
     * some 170 MB/s of WAL on two busy cores waited four times 40-100 ms in 3 s for the preparation (zero-filling
     * 64 MiB a MiB at a time, yielding between, then an fsync) to finish.
     */
    static final int BEGIN_PAST_PART = 4;

    private final FileIOFactory io;
    private final Path dir;
    private final long segmentSize;
    /** The mode the WAL appends under, which the segments' headers record. */
    private final WalSyncMode mode;
    /** Whether the segments are forced through a durable copy (see {@link WalSegmentCopy}). */
    private final boolean withCopy;
    private final String threadName;
    /**
     * The store's id once a checkpoint marker holds it, else 0 (see {@link WalSegmentDescriptor}): what a segment's
     * header records, read when it is prepared and again when it is taken.
     */
    private volatile long storeId;
    /** Makes the preparing thread: {@code Thread::new}, or in tests one the OS refuses to start. */
    volatile ThreadFactory threads = Thread::new;
    /** The segment being prepared, or -1; guarded by this. */
    private long index = -1;
    private CompletableFuture<Long> task; // guarded by this; completes with the store id the header records
    private boolean closed; // guarded by this

    WalSegmentPreparer(FileIOFactory io, Path dir, long segmentSize, WalSyncMode mode, boolean withCopy, long storeId, String threadName) {
        this.io = io;
        this.dir = dir;
        this.segmentSize = segmentSize;
        this.mode = mode;
        this.withCopy = withCopy;
        this.storeId = storeId;
        this.threadName = threadName;
    }

    /** The store's id is durable in a checkpoint marker: segments prepared or taken from now on record it. */
    void storeIdDurable(long id) {
        storeId = id;
    }

    /** Starts preparing segment {@code next}'s file in the background, unless it is already under way. */
    synchronized void prepareAhead(long next) {
        if (closed || index == next) return;
        index = next;
        CompletableFuture<Long> f = new CompletableFuture<>();
        task = f;
        Thread t = threads.newThread(() -> {
            try {
                long id = storeId;
                WalSegment.prepareFile(io, dir, next, segmentSize, mode, id, withCopy);
                f.complete(id);
            } catch (Throwable e) {
                f.completeExceptionally(e);
            }
        });
        t.setName(threadName);
        t.setDaemon(true);
        try {
            t.start();
        } catch (OutOfMemoryError e) {
            // no thread to prepare it: the switch creates the file itself, and take and close find nothing to wait for
            LOG.warn("cannot start a thread to prepare WAL segment {} ahead ({}); the segment switch creates it instead", next, e.toString());
            f.completeExceptionally(e);
        }
    }

    /** True when segment {@code next}'s file has been prepared and waits for the switch. */
    synchronized boolean ready(long next) {
        return index == next && task.isDone() && !task.isCompletedExceptionally();
    }

    /**
     * Segment {@code next}, mapped under its temporary name (named once the previous segment is durable, see
     * {@link WalSegment#name}): the file prepared ahead when it is ready (waiting for it if it is still being written),
     * otherwise prepared now.
     *
     * @throws StorageException naming the segment file when it cannot be created
     */
    WalSegment take(long next) {
        CompletableFuture<Long> f;
        synchronized (this) {
            f = index == next ? task : null;
            index = -1;
            task = null;
        }
        long id = storeId;
        if (f == null || !succeeded(f)) WalSegment.prepareFile(io, dir, next, segmentSize, mode, id, withCopy);
        else if (f.join() != id) WalSegment.restampPrepared(io, dir, next, segmentSize, mode, id); // prepared before the id was durable
        return WalSegment.openPrepared(io, WalSegment.tempPath(dir, next), next, segmentSize, withCopy);
    }

    private static boolean succeeded(CompletableFuture<Long> f) {
        try {
            f.join();
            return true;
        } catch (CompletionException | java.util.concurrent.CancellationException e) {
            LOG.debug("preparing a WAL segment ahead failed; creating it at the switch instead", e);
            return false;
        }
    }

    /** Waits for a preparation under way and deletes its file: nothing is left but the WAL's segments. */
    @Override
    public void close() {
        CompletableFuture<Long> f;
        long pending;
        synchronized (this) {
            closed = true;
            f = task;
            pending = index;
            task = null;
            index = -1;
        }
        if (f == null) return;
        succeeded(f);
        Path temp = WalSegment.tempPath(dir, pending);
        try {
            io.delete(WalSegmentCopy.path(dir, pending));
            io.delete(temp);
        } catch (IOException e) {
            LOG.debug("cannot delete the prepared WAL segment {}; the next open deletes it", temp, e);
        }
    }
}
