package dev.varve.snapshot;

import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.util.ThreadEnd;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * The next part of a {@link MaplogFile} of many parts, created ahead of need on a short-lived thread of its own. A
 * part is created durably — its header written to a temp file and fsynced, the file renamed, the directory fsynced —
 * and the archiver, which appends the Maplog and starts each new part, did that itself: with a snapshot after every
 * batch a 2-vCPU VM started some three parts a second, about 30 ms each, while the 16 MiB capture buffer filled in 8
 * ms and the writer waited on it (docs/performance.md, "The capture buffer reused last in, first out"). Now, as each
 * part begins, the one after it is created here, and the archiver takes it when the part fills.
 *
 * <p>On disk a part created ahead is an ordinary part of no entries after the last one, which is not full: what open
 * already finds after a power loss that lost a part's last entries once its successor's creation was durable, and sets
 * aside for the recovery cut to delete ({@link MaplogParts}: it holds nothing a checkpoint mark made durable). A
 * clean close deletes it. The archiver takes it only if it is the part it needs with the header it would write (the
 * store's durable id may have been recorded since); otherwise, or if its creation failed, the archiver deletes it and
 * creates the part itself, as before, reporting any failure then.
 */
final class NextPart implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NextPart.class);
    /** How long close, or the archiver needing the part, waits for a creation under way. */
    private static final long WAIT_NANOS = TimeUnit.MINUTES.toNanos(1);

    private final FileIOFactory io;
    private final DescriptorBudget budget;
    private final String threadName;
    private final ThreadFactory threads;
    // guarded by this: the part being or been created and its header, and the thread creating it (null once its end
    // was awaited); created is written by that thread and read after its end
    private Path path;
    private ByteBuffer header;
    private Thread creating;
    private boolean created;
    private boolean closed;

    /** Parts of a log whose files are opened under {@code budget}; creations ahead run on threads named {@code threadName}. */
    NextPart(FileIOFactory io, DescriptorBudget budget, String threadName) {
        this(io, budget, threadName, Thread::new);
    }

    /** As above, the creating threads made by {@code threads} (in tests, one the OS refuses to start). */
    NextPart(FileIOFactory io, DescriptorBudget budget, String threadName, ThreadFactory threads) {
        this.io = io;
        this.budget = budget;
        this.threadName = threadName;
        this.threads = threads;
    }

    /**
     * Part {@code part}, holding {@code header}, created durably — ahead of need if it was, else now — and the creation
     * of part {@code following}, with the same header, begun ahead of need.
     */
    PartFile start(Path part, ByteBuffer header, Path following) throws IOException {
        PartFile started = take(part, header) ? new PartFile(io, part, budget) : PartFile.created(io, DurableFiles.create(io, part, header), budget);
        prepare(following, header);
        return started;
    }

    /** Starts creating part {@code part} holding {@code header}, unless the log closed; none is under way or kept. */
    private synchronized void prepare(Path part, ByteBuffer h) {
        if (closed) return;
        path = part;
        header = h.duplicate();
        created = false;
        Thread t = threads.newThread(() -> create(part, h));
        t.setName(threadName);
        t.setDaemon(true); // a hung fsync must not keep the JVM alive; the wait for it is bounded
        try {
            t.start();
            creating = t;
        } catch (OutOfMemoryError e) {
            // no thread to create it (unable to create native thread): the archiver creates the part when it needs it,
            // and the append that started this part must not fail for it
            LOG.warn("archive file {}: cannot start a thread to create it ahead of need ({}); the archiver will create it", part, e.toString());
            path = null;
        }
    }

    /** The creating thread's work: {@link #created} tells whether it succeeded, read once the thread has ended. */
    private void create(Path part, ByteBuffer h) {
        try {
            DurableFiles.create(io, part, h).close();
            created = true;
        } catch (IOException | RuntimeException e) {
            LOG.warn("archive file {}: creating it ahead of need failed ({}); the archiver will create it when needed", part, e.toString());
        }
    }

    /**
     * Whether part {@code part}, holding {@code header}, was created ahead (waiting for a creation under way): then it
     * is the caller's. Otherwise any part created ahead is deleted, and the caller creates {@code part} itself.
     */
    private synchronized boolean take(Path part, ByteBuffer header) {
        awaitCreation();
        if (created && part.equals(path) && header.equals(this.header)) {
            path = null;
            return true;
        }
        discard();
        return false;
    }

    /** Waits for a creation under way, then deletes the part it created (unused): the log closes. */
    @Override
    public synchronized void close() {
        closed = true;
        if (creating != null && !ThreadEnd.await(creating, System.nanoTime() + WAIT_NANOS)) {
            LOG.warn("archive file {}: creating it ahead of need has not finished in a minute; its daemon thread is left, and open sets the part aside", path);
            return;
        }
        creating = null;
        discard();
    }

    /** Deletes the part created ahead, if any, or what a failed creation left; no creation is under way. */
    private void discard() {
        if (path == null) return;
        Path p = path;
        path = null;
        try {
            // durably, as every part goes (each deletion before the next, the log's rule); a creation that failed may
            // have left its temp file, or its part under its name if only the directory's fsync failed
            for (Path f : new Path[] {p, DurableFiles.tempOf(p)}) if (io.exists(f)) io.deleteDurably(f);
        } catch (IOException e) {
            LOG.warn("archive file {}: created ahead and unused, it could not be deleted ({}); open sets it aside", p, e.toString());
        }
    }

    /**
     * Waits for the creating thread to end (the caller holds the monitor, which that thread never takes). A creation
     * hung past the wait fails the archive rather than let the archiver create the part beside it, whose rename could
     * then land on the part in use.
     */
    private void awaitCreation() {
        if (creating == null) return;
        if (!ThreadEnd.await(creating, System.nanoTime() + WAIT_NANOS))
            throw new StorageException("creating an archive file ahead of need has not finished in a minute", path);
        creating = null;
    }
}
