package dev.varve.snapshot;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.MappedRegion;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A file of the archive that one of many makes up — a Maplog part, a Pagelog segment — holding a descriptor only
 * while it is used. Logs keep every part they have not reclaimed, and under the default retention (keep everything)
 * their number grows with history: with a snapshot after every batch a 2-vCPU VM made about 50 Maplog parts a
 * second, and with a descriptor each (two once fsynced) a store hit the process's limit within minutes, then could
 * not be opened again under it. A file opens at its first use and lets its descriptor go when its {@link
 * DescriptorBudget} has too many open, unless it is {@link #keepOpen kept open} (the file being appended to) or was
 * written since its last force: the fsync that makes those writes durable must go through the descriptor they were
 * written with, which is the one that reports their write-back error.
 *
 * <p>Reads may run concurrently (views read Pagelog segments without the volume's lock): they share a read lock,
 * and letting the descriptor go takes the write lock, so it waits for the reads under way. A force may run beside a
 * write (the checkpoint forces a Maplog's parts before it stops the archiver's appends, see
 * {@link MaplogFile#forceWritten}): writes are counted when they begin and when they are done, and a force that
 * began with a write under way leaves the file unforced, for the next force to cover.
 */
final class PartFile implements FileIO {
    private final FileIOFactory io;
    private final Path path;
    private final DescriptorBudget budget;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    /** Null while released; changed under the write lock. */
    private FileIO file;
    /** Writes (and truncates) begun, and done, through this handle. */
    private final AtomicLong begun = new AtomicLong();
    private final AtomicLong done = new AtomicLong();
    /** The writes begun before the latest force that found none under way began: all of them durable. */
    private final AtomicLong forcedThrough = new AtomicLong();
    private volatile boolean keepOpen;
    private volatile boolean closed;
    /** When it was last used (nanoTime): the budget lets the least recently used go first. */
    private volatile long lastUse;

    /** A file not opened yet. */
    PartFile(FileIOFactory io, Path path, DescriptorBudget budget) {
        this.io = io;
        this.path = path;
        this.budget = budget;
    }

    /** A file just created, open: its descriptor counts against the budget from the budget's next trim. */
    static PartFile created(FileIOFactory io, FileIO created, DescriptorBudget budget) {
        PartFile p = new PartFile(io, created.path(), budget);
        p.file = created;
        p.lastUse = System.nanoTime();
        budget.track(p);
        return p;
    }

    private interface Use<T> {
        T on(FileIO f) throws IOException;
    }

    private <T> T use(Use<T> use) throws IOException {
        lastUse = System.nanoTime();
        lock.readLock().lock();
        try {
            FileIO f = file;
            if (f != null) return use.on(f);
        } finally {
            lock.readLock().unlock();
        }
        boolean opened = false;
        T result;
        lock.writeLock().lock();
        try {
            if (closed) throw new ClosedChannelException();
            if (file == null) {
                file = io.open(path, false);
                opened = true;
            }
            result = use.on(file);
        } finally {
            lock.writeLock().unlock();
        }
        if (opened) budget.opened(this); // outside the lock: the budget may let another file go, which takes that one's
        return result;
    }

    /** Keeps the descriptor while {@code on} (the file being appended to), or lets it go with the others once not. */
    void keepOpen(boolean on) {
        keepOpen = on;
    }

    /**
     * Closes the descriptor until the next use, unless kept open or written since the last force; false when it stays
     * open for either reason.
     */
    boolean release() throws IOException {
        FileIO f;
        lock.writeLock().lock();
        try {
            if (file == null) return true;
            if (keepOpen || unforced()) return false;
            f = file;
            file = null;
        } finally {
            lock.writeLock().unlock();
        }
        budget.released(this);
        f.close();
        return true;
    }

    /** Whether the budget may let its descriptor go now. */
    boolean releasable() {
        return !keepOpen && !unforced() && !closed;
    }

    long lastUse() {
        return lastUse;
    }

    @Override
    public Path path() {
        return path;
    }

    @Override
    public int read(ByteBuffer dst, long position) throws IOException {
        return use(f -> f.read(dst, position));
    }

    /** Through the open descriptor's mapping, which goes when the descriptor does (the budget counts both). */
    @Override
    public boolean readMapped(ByteBuffer dst, long position, long sealed) throws IOException {
        return use(f -> f.readMapped(dst, position, sealed));
    }

    /** Whether a write begun through this handle is not covered by a force yet. */
    private boolean unforced() {
        return forcedThrough.get() < begun.get();
    }

    @Override
    public void write(ByteBuffer src, long position) throws IOException {
        written(f -> {
            f.write(src, position);
            return null;
        });
    }

    /** Runs a write counted as begun before (a release that sees it cannot close the descriptor it uses) and done after. */
    private void written(Use<Void> write) throws IOException {
        begun.incrementAndGet();
        try {
            use(write);
        } finally {
            done.incrementAndGet(); // failed half-way, it may still have changed the file: the next force covers it
        }
    }

    /** Forces what was written; it may run beside a write, which it then leaves to the next force. */
    @Override
    public void force() throws IOException {
        if (!unforced()) return; // nothing written since the last force (or ever, through this handle)
        // read before the fsync, done first: as many done as begun since means none under way, and the fsync makes all
        // of them durable; with one under way it cannot tell which are, and the next force counts them
        long doneBefore = done.get();
        long begunBefore = begun.get();
        boolean noneUnderWay = doneBefore == begunBefore;
        use(f -> {
            f.force();
            return null;
        });
        if (noneUnderWay) forcedThrough.accumulateAndGet(begunBefore, Math::max);
    }

    @Override
    public long size() throws IOException {
        return use(FileIO::size);
    }

    @Override
    public void truncate(long size) throws IOException {
        written(f -> {
            f.truncate(size);
            return null;
        });
    }

    @Override
    public MappedRegion map(long position, int length) {
        throw new UnsupportedOperationException("archive files are not mapped: " + path);
    }

    @Override
    public void close() throws IOException {
        FileIO f;
        lock.writeLock().lock();
        try {
            closed = true;
            f = file;
            file = null;
        } finally {
            lock.writeLock().unlock();
        }
        budget.released(this);
        if (f != null) f.close();
    }
}
