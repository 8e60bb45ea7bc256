package dev.varve.core.wal;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.ThreadFactory;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The second half of a segment switch under LOG_ONLY and BACKGROUND, run off the writers' path: forces what of the
 * old segment is not durable yet (its seal included) into its {@linkplain WalSegmentCopy durable copy}, gives that copy
 * the segment's name, then gives the new segment — which writers have been appending to since the switch, under its
 * temporary name — its segment name.
 *
 * <p>Design note. Forcing the old segment used to be the switch itself, under the append lock: every writer (and,
 * behind the WAL, every operation holding the checkpoint read lock) waited for an {@code msync} of up to a
 * checkpoint period's worth of records, 10 to 80 ms on this project's machines, once per segment. The on-disk rules
 * stay as they were, because the name is what proves: a file with a segment's name still proves every earlier segment
 * durable (it is named only after the force), and a seal still names a successor that existed. What is new is a
 * window in which the newest named segment is sealed and its successor exists only under its temporary name; open
 * takes that file as the successor ({@link WalOpenScan}): after a crash of the process everything written to it is
 * in the OS, and after a power loss it holds no more than an unforced tail may. Anything that needs records of the
 * new segment durable (a force, close) first finishes the pending half here, on its own thread if it has not run yet.
 * One switch's second half at a time: the next switch finishes it first (normally long done by then).
 */
final class WalSegmentCloser {
    private static final Logger LOG = LoggerFactory.getLogger(WalSegmentCloser.class);
    private final FileIOFactory io;
    private final Path dir;
    private final String threadName;
    private final UnaryOperator<StorageException> onFailure;
    /** Takes a segment the closer made whole in its file, to close once no force reads it ({@link WalForcer#retire}). */
    private final Consumer<WalSegment> retire;
    private FutureTask<Void> pending; // guarded by this
    /** The index of the last segment a switch's second half made whole under its name; -1 before the first. */
    private volatile long wholeThrough = -1;
    /** Makes the closing thread: {@code Thread::new}, or in tests one the OS refuses to start. */
    volatile ThreadFactory threads = Thread::new;

    /**
     * {@code onFailure} records a failure of the background half (the WAL then refuses work) and returns it;
     * {@code retire} takes each old segment once it is whole in its file.
     */
    WalSegmentCloser(FileIOFactory io, Path dir, String threadName, UnaryOperator<StorageException> onFailure, Consumer<WalSegment> retire) {
        this.io = io;
        this.dir = dir;
        this.threadName = threadName;
        this.onFailure = onFailure;
        this.retire = retire;
    }

    /**
     * Starts, in the background, forcing bytes [from, to) of {@code old} (sealed, and written to no more), then naming
     * {@code next} and retiring {@code old} (closed as it is when that fails). Call after {@link #finish} (no other
     * switch pending).
     */
    void begin(WalSegment old, int from, int to, WalSegment next) {
        FutureTask<Void> task = new FutureTask<>(() -> {
            boolean whole = false;
            try {
                old.force(from, to);
                old.installCopy(io, dir, to); // its name now holds every record, durable
                next.name(io, dir);
                whole = true;
                wholeThrough = old.index;
            } catch (StorageException e) {
                throw onFailure.apply(e);
            } finally {
                if (whole) retire.accept(old);
                else WalSegment.closeQuietly(old); // its copy may be the only file with every record: the open reads it
            }
        }, null);
        synchronized (this) {
            if (pending != null) throw new IllegalStateException("a segment switch is still being finished");
            pending = task;
        }
        Thread t = threads.newThread(task);
        t.setName(threadName);
        t.setDaemon(true);
        try {
            t.start();
        } catch (OutOfMemoryError e) {
            // the OS refused the thread (unable to create native thread): the switch, half done (the old segment is
            // sealed), must still move appending to the next segment, so its second half runs here, as finish would
            LOG.warn("cannot start a thread to finish the WAL segment switch ({}); finishing it on the appending thread", e.toString());
            task.run();
        }
    }

    /**
     * Returns once the pending switch (if any) is finished: the old segment durable, the new one named. Runs it on the
     * calling thread when its own has not started yet, otherwise waits for it; so a caller holding the force lock may
     * see the old segment {@linkplain WalForcer#retire retired} — closed — by the time this returns.
     *
     * @return the index of the last segment a switch made whole under its name (every record of it durable), -1 for none
     * @throws StorageException when it failed (as it did for every caller since; the WAL was failed with it)
     */
    long finish() {
        FutureTask<Void> task;
        synchronized (this) {
            task = pending;
        }
        if (task == null) return wholeThrough;
        task.run(); // no-op when it ran or runs elsewhere
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    task.get();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true; // the durability a caller waits for cannot be given up half-way
                }
            }
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException r) throw r;
            if (c instanceof Error err) throw err;
            throw new IllegalStateException(c);
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
        synchronized (this) {
            if (pending == task) pending = null;
        }
        return wholeThrough;
    }

    /** As {@link #finish}, for a WAL that failed or is being halted: a failure here was reported already. */
    void finishQuietly() {
        try {
            finish();
        } catch (RuntimeException ignored) {
            // the WAL failed with it; that failure is the one reported
        }
    }
}
