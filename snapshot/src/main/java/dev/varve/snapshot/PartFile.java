package dev.varve.snapshot;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.MappedRegion;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Path;
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
 * and letting the descriptor go takes the write lock, so it waits for the reads under way.
 */
final class PartFile implements FileIO {
    private final FileIOFactory io;
    private final Path path;
    private final DescriptorBudget budget;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    /** Null while released; changed under the write lock. */
    private FileIO file;
    private volatile boolean unforced;
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
            if (keepOpen || unforced) return false;
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
        return !keepOpen && !unforced && !closed;
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

    @Override
    public void write(ByteBuffer src, long position) throws IOException {
        unforced = true; // before the write: a release that sees it clear cannot close the descriptor the write uses
        use(f -> {
            f.write(src, position);
            return null;
        });
    }

    /** Forces what was written; the file's writer calls it, never beside one of its own writes. */
    @Override
    public void force() throws IOException {
        if (!unforced) return; // nothing written since the last force (or ever, through this handle)
        use(f -> {
            f.force();
            return null;
        });
        unforced = false;
    }

    @Override
    public long size() throws IOException {
        return use(FileIO::size);
    }

    @Override
    public void truncate(long size) throws IOException {
        unforced = true;
        use(f -> {
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
