package dev.varve.core.wal;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.MappedRegion;
import dev.varve.core.io.StorageException;
import dev.varve.core.memory.PageSlots;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One WAL segment file, mapped whole, or — the segment an FSYNC WAL appends to — {@linkplain #staged staged}: its
 * records are written into a buffer of the process and reach the file by one {@code pwrite} of the forced range
 * ({@link #force}). A mapped segment of a LOG_ONLY or BACKGROUND WAL has a {@linkplain WalSegmentCopy durable copy}:
 * forces write the forced range into it instead of forcing the mapping, and the copy replaces the file once whole.
 * Creation goes through a temporary name and an atomic rename, so a file with a segment's name always has a durable
 * header and its directory entry is durable too (the rename fsyncs the directory). IO failures become
 * {@link StorageException}s naming the file.
 *
 * <p>Why two ways to write: a page dirtied through a mapping costs an fsync two to three times what the same bytes
 * written with {@code pwrite} cost (ext4 on this project's machines: 0.7-1.3 ms against 0.3-0.5 ms), and under FSYNC
 * every commit is an fsync. A mapped segment is right for LOG_ONLY and BACKGROUND, whose promise — an append survives
 * a crash of the process — needs the bytes in the OS at once; under FSYNC an append is only promised once forced,
 * so it may wait in the process until then.
 */
final class WalSegment implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WalSegment.class);
    private static final byte[] ZEROS = new byte[4096];
    private static final int PREALLOCATE_CHUNK_BYTES = 1 << 20;

    final long index;
    /** The file: under its temporary name until {@link #name} gives it the segment's (messages only read it). */
    volatile Path path;
    private final FileIO file;
    /** The mapping writes go to; null when staged. */
    private final MappedRegion region;
    /** Where forces write, with a durable copy (see {@link WalSegmentCopy}); null without one. */
    private final FileIOFactory copyIO;
    private FileIO copy; // this: opened at the first force
    /** The copy holds this segment's bytes [0, copied): a force writes it from there (or from where it starts, if before). */
    private int copied; // this
    /** The copy was prepared with the segment and holds no record: its first force need not look for its records' end. */
    private final boolean copyPrepared;
    /**
     * The copy was renamed over the file, {@link #file} is the old one, no longer named, and it had no other name (a
     * hard link): it may be truncated.
     */
    private volatile boolean replacedFileUnnamed;
    /**
     * The whole segment, little-endian; position/limit of this instance are never changed. Staged: the process's
     * copy, which holds what was written to the file (or is about to be) in [0, the WAL's end offset) and anything
     * beyond it, which is never forced.
     */
    final ByteBuffer buffer;

    private WalSegment(long index, Path path, FileIO file, MappedRegion region, FileIOFactory copyIO, boolean copyPrepared) {
        this.index = index;
        this.path = path;
        this.file = file;
        this.region = region;
        this.copyIO = copyIO;
        this.copyPrepared = copyPrepared;
        this.buffer = region.buffer().duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    private WalSegment(WalSegment mapped, ByteBuffer staging) {
        this.index = mapped.index;
        this.path = mapped.path;
        this.file = mapped.file;
        this.region = null;
        this.copyIO = null;
        this.copyPrepared = false;
        this.buffer = staging;
    }

    /**
     * This segment written through {@code staging} (a buffer of the segment's size, little-endian, whose contents past
     * {@code upTo} do not matter) from now on: bytes [0, upTo) are copied into it, and {@link #force} writes what was
     * written there to the file. Takes over the file; do not use this instance any more.
     */
    WalSegment staged(ByteBuffer staging, int upTo) {
        if (staging.capacity() != buffer.capacity()) {
            throw new IllegalArgumentException("a staging buffer of " + staging.capacity() + " bytes for a segment of " + buffer.capacity());
        }
        staging.put(0, buffer, 0, upTo);
        return new WalSegment(this, staging);
    }

    /**
     * Creates segment {@code index} in {@code dir}: every block allocated (so a full disk fails here, not as a fault
     * on a mapped store), header written and forced, directory entry durable.
     */
    static WalSegment create(FileIOFactory io, Path dir, long index, long segmentSize, WalSyncMode mode, long storeId, boolean withCopy) {
        prepareFile(io, dir, index, segmentSize, mode, storeId, withCopy);
        return install(io, dir, index, segmentSize, withCopy);
    }

    /**
     * The slow half of {@link #create}, which {@link WalSegmentPreparer} runs ahead of time: writes segment
     * {@code index} under its temporary name with every block allocated, the header (recording {@code mode}, which every
     * record of the segment is written under, and {@code storeId}, the store's durable id or 0) forced and the name durable. A
     * crash leaves only a temporary file, which open deletes. The name is made durable here, not only at the rename:
     * the old segment's seal names this file before the rename does, and a power cut between the two must not keep
     * the seal and lose the file (where a new entry is durable only once its directory is fsynced), which open
     * refuses as a lost segment. With {@code withCopy}, its {@linkplain WalSegmentCopy durable copy} is prepared the
     * same way, so forces never need a block a full disk lacks either.
     */
    static void prepareFile(FileIOFactory io, Path dir, long index, long segmentSize, WalSyncMode mode, long storeId, boolean withCopy) {
        ByteBuffer header = ByteBuffer.allocate(WalSegmentDescriptor.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        WalSegmentDescriptor.writeHeader(header, segmentSize, index, mode, storeId);
        try {
            allocate(io, tempPath(dir, index), segmentSize, header);
            if (withCopy) allocate(io, WalSegmentCopy.path(dir, index), segmentSize, header);
            io.forceDirectory(dir);
        } catch (IOException | UncheckedIOException e) {
            throw new StorageException("cannot create WAL segment " + index + ": " + reason(e), dir.resolve(WalSegmentDescriptor.fileName(index)), unwrap(e));
        }
    }

    /**
     * Writes {@code file} whole: zeros with {@code header} first, every block allocated, and forced. The thread yields
     * its core after each MiB: the preparer, started by a writer's append, tends to run on that writer's core, which
     * would otherwise wait behind a good part of the fill (docs/performance.md, "Checkpoint threads that yield").
     */
    private static void allocate(FileIOFactory io, Path file, long segmentSize, ByteBuffer header) throws IOException {
        try (FileIO f = io.open(file, true)) {
            f.truncate(0); // a leftover from a crashed creation may hold anything
            ByteBuffer zeros = ByteBuffer.allocate((int) Math.min(segmentSize, PREALLOCATE_CHUNK_BYTES));
            for (long p = 0; p < segmentSize; p += zeros.capacity()) {
                f.write(zeros.clear().limit((int) Math.min(zeros.capacity(), segmentSize - p)), p);
                Thread.yield();
            }
            f.write(header.duplicate(), 0);
            f.force();
        }
    }

    /**
     * Rewrites the header of segment {@code index}, prepared under its temporary name and not written to since, for
     * {@code storeId}: a segment prepared ahead before the store's id was durable records it once it is.
     */
    static void restampPrepared(FileIOFactory io, Path dir, long index, long segmentSize, WalSyncMode mode, long storeId) {
        try (FileIO tempFile = io.open(tempPath(dir, index), false)) {
            ByteBuffer header = ByteBuffer.allocate(WalSegmentDescriptor.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            WalSegmentDescriptor.writeHeader(header, segmentSize, index, mode, storeId);
            tempFile.write(header, 0);
            tempFile.force();
        } catch (IOException | UncheckedIOException e) {
            throw new StorageException("cannot write the header of WAL segment " + index + ": " + reason(e), tempPath(dir, index), unwrap(e));
        }
    }

    /**
     * The fast half of {@link #create}: gives the prepared file its segment name (directory entry durable) and maps it,
     * forced through a durable copy with {@code withCopy}.
     */
    static WalSegment install(FileIOFactory io, Path dir, long index, long segmentSize, boolean withCopy) {
        rename(io, dir, index);
        return openPrepared(io, dir.resolve(WalSegmentDescriptor.fileName(index)), index, segmentSize, withCopy);
    }

    /** Where segment {@code index} is prepared, and written until it is named (see {@link WalSegmentCloser}). */
    static Path tempPath(Path dir, long index) {
        return dir.resolve(WalSegmentDescriptor.fileName(index) + WalSegmentDescriptor.TEMP_SUFFIX);
    }

    /**
     * Maps a file {@link #prepareFile} wrote, under whichever name it has now; a failure names the segment's file (the
     * message says which name it had); forced through a durable copy with {@code withCopy}.
     */
    static WalSegment openPrepared(FileIOFactory io, Path path, long index, long segmentSize, boolean withCopy) {
        Path named = path.resolveSibling(WalSegmentDescriptor.fileName(index));
        WalSegment seg;
        try {
            seg = open(io, path, index, segmentSize, withCopy ? Copy.PREPARED : Copy.NONE);
        } catch (StorageException e) {
            if (path.equals(named)) throw e;
            // the reason stays in the message: it is what a log line shows
            Throwable reason = e.getCause();
            throw new StorageException("cannot open WAL segment " + index + ", prepared as " + path.getFileName()
                    + (reason == null ? "" : ": " + reason.getMessage()), named, reason);
        }
        if (seg == null) throw new StorageException("WAL segment " + index + " has the wrong size after creation", named);
        return seg;
    }

    /**
     * Gives this segment, mapped under its temporary name, the segment's name (directory entry durable). Call once
     * every earlier segment is durable: a file with a segment's name proves that.
     */
    void name(FileIOFactory io, Path dir) {
        rename(io, dir, index);
        path = dir.resolve(WalSegmentDescriptor.fileName(index));
    }

    private static void rename(FileIOFactory io, Path dir, long index) {
        Path named = dir.resolve(WalSegmentDescriptor.fileName(index));
        try {
            io.atomicMove(tempPath(dir, index), named);
        } catch (IOException | UncheckedIOException e) {
            throw new StorageException("cannot name WAL segment " + index + ": " + reason(e), named, unwrap(e));
        }
    }

    /**
     * Opens and maps an existing segment file without checking its records, forced through a durable copy (see
     * {@link WalSegmentCopy}) with {@code withCopy}. Returns null when the file does not have {@code segmentSize} bytes;
     * throws when it is a valid segment of another size (the size cannot change).
     */
    static WalSegment open(FileIOFactory io, Path path, long index, long segmentSize, boolean withCopy) {
        return open(io, path, index, segmentSize, withCopy ? Copy.LEFT : Copy.NONE);
    }

    /** How a segment opened is forced: through no copy, one prepared with it (empty), or one an earlier run left. */
    private enum Copy { NONE, PREPARED, LEFT }

    private static WalSegment open(FileIOFactory io, Path path, long index, long segmentSize, Copy copy) {
        FileIO file = openFile(io, path, index, segmentSize);
        if (file == null) return null;
        try {
            return new WalSegment(index, path, file, map(file, segmentSize), copy == Copy.NONE ? null : io, copy == Copy.PREPARED);
        } catch (IOException | UncheckedIOException e) {
            closeQuietly(file);
            throw new StorageException("cannot open WAL segment " + index + ": " + reason(e), path, unwrap(e));
        }
    }

    /**
     * Opens an existing segment file for reading or writing, unchecked; returns null (the file closed) when it does not
     * have {@code segmentSize} bytes, and throws when it is a valid segment of another size (the size cannot change).
     */
    static FileIO openFile(FileIOFactory io, Path path, long index, long segmentSize) {
        FileIO file = null;
        try {
            file = io.open(path, false);
            long size = file.size();
            if (size == segmentSize) return file;
            ByteBuffer header = ByteBuffer.allocate(WalSegmentDescriptor.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            file.read(header, 0);
            file.close();
            if (WalSegmentDescriptor.checkHeader(header, index) == null
                    && WalSegmentDescriptor.headerSegmentSize(header) == size) {
                throw new StorageException("the WAL was written with segments of " + size
                        + " bytes but walSegmentSize is " + segmentSize
                        + "; an existing WAL keeps its segment size, set walSegmentSize=" + size, path);
            }
            return null;
        } catch (IOException | UncheckedIOException e) {
            closeQuietly(file);
            throw new StorageException("cannot open WAL segment " + index + ": " + reason(e), path, unwrap(e));
        }
    }

    /**
     * Maps the whole segment. The JDK reports a mapping the OS refused (ENOMEM) as {@code IOException: Map failed},
     * caused by an {@code OutOfMemoryError}, which says nothing of which limit it met: the message names them.
     */
    private static MappedRegion map(FileIO file, long segmentSize) throws IOException {
        try {
            return file.map(0, (int) segmentSize);
        } catch (IOException e) {
            if (!(e.getCause() instanceof OutOfMemoryError)) throw e;
            throw new IOException(e.getMessage() + ": the OS refused to map the segment's " + segmentSize + " bytes (the process's "
                    + "address space, ulimit -v, or its count of memory maps, vm.max_map_count, is exhausted)", e);
        }
    }

    /**
     * Makes bytes [from, to) durable; a staged segment writes them to its file first, in one {@code pwrite}. That write
     * may be cut short (the kernel stops at a page boundary when the process is killed) or, on power loss, land in any
     * subset of its 512-byte sectors, so a record's length may reach the file without all of its body. That is a torn
     * tail by FSYNC's rule ({@link WalRecordScan#scanRecords}), and that rule judges this segment whichever mode reopens
     * it: its header records FSYNC (format 2 on; a writable open never appends to a segment of another mode or of
     * format 1, {@link WalOpenSwitch}). Where the range starts mid-sector, after records an earlier force made
     * durable, the disk rewrites that sector with those records' bytes unchanged: kept or lost, it leaves them whole.
     */
    void force(int from, int to) {
        if (to <= from) return;
        try {
            if (region == null) {
                file.write(buffer.duplicate().limit(to).position(from), from);
                file.forceData(); // the size never changes: a segment is created whole
            } else if (copyIO != null) {
                forceCopy(from, to);
            } else {
                region.force(from, to - from);
            }
        } catch (IOException | UncheckedIOException e) {
            throw new StorageException("cannot force WAL segment " + index + " bytes [" + from + ", " + to + "): " + reason(e),
                    path, unwrap(e));
        }
    }

    /**
     * Makes bytes [0, to) of a segment an open goes on appending to durable in its own file, mapping and all: what a
     * crashed process left in the page cache (its durable copy, if any, is written on by later forces from where its
     * own records end). Once per open, so the mapping's writeback costs no more than it did.
     */
    void forceOpened(int to) {
        if (region == null) {
            force(0, to);
            return;
        }
        try {
            region.force(0, to);
        } catch (IOException | UncheckedIOException e) {
            throw new StorageException("cannot force WAL segment " + index + " bytes [0, " + to + "): " + reason(e), path, unwrap(e));
        }
    }

    /** Zeroes bytes [from, to) and makes them durable (cuts a torn tail). */
    void zero(int from, int to) {
        ByteBuffer b = buffer.duplicate();
        for (int p = from; p < to; p += ZEROS.length) {
            b.put(p, ZEROS, 0, Math.min(ZEROS.length, to - p));
        }
        force(from, to);
    }

    /**
     * Writes bytes [from, to) of the mapping into the durable copy — from where the copy's bytes end, if that is
     * before — and forces it. The closer and a force may both force a segment just switched away from, hence the
     * monitor.
     */
    private synchronized void forceCopy(int from, int to) throws IOException {
        FileIO c = copy();
        int start = Math.min(from, copied);
        if (start >= to) return; // durable already: installCopy asks after the force that wrote the last records
        c.write(buffer.duplicate().limit(to).position(start), start);
        c.forceData();
        copied = Math.max(copied, to);
    }

    /**
     * The durable copy, opened at this segment's first force: one a crashed process left holds its valid records (the
     * scan's rule) and is written on from their end; a new one (or one not whole) is made the segment's size, with
     * holes, its size and entry forced. Caller holds the monitor.
     */
    private FileIO copy() throws IOException {
        if (copy != null) return copy;
        Path dir = path.getParent();
        Path p = WalSegmentCopy.path(dir, index);
        int size = buffer.capacity();
        int end = copyPrepared ? -1 : WalSegmentCopy.end(copyIO, dir, index, size);
        FileIO c = copyIO.open(p, true);
        try {
            if (end == 0) { // none, or not whole
                c.truncate(0);
                c.write(ByteBuffer.allocate(1), size - 1); // reads as zeros up to there
                c.force(); // the size with it: fdatasync need not keep it
                copyIO.forceDirectory(dir);
            }
        } catch (IOException | RuntimeException e) {
            closeQuietly(c);
            throw e;
        }
        copy = c;
        // a copy with no record yet is written whole, header first: one prepared before the store's id was durable
        // has the header without it, which the mapping's has (restampPrepared)
        copied = end > WalSegmentDescriptor.HEADER_SIZE ? end : 0;
        return c;
    }

    /**
     * Gives the durable copy, forced up to {@code end} (where the records end, the seal included), this segment's name
     * (the rename made durable): the name then holds every record on disk, and the file the mapping writes to, unnamed,
     * is truncated when the segment {@linkplain #retire retires}. A segment without a copy keeps its file.
     */
    void installCopy(FileIOFactory io, Path dir, int end) {
        if (copyIO == null) return;
        try {
            forceCopy(end, end); // writes only what no force wrote yet (normally nothing: the caller forced to the end)
            boolean onlyName = io.linkCount(path) == 1;
            io.atomicMove(WalSegmentCopy.path(dir, index), path);
            io.forceDirectory(dir);
            replacedFileUnnamed = onlyName;
        } catch (IOException | UncheckedIOException e) {
            throw new StorageException("cannot name the durable copy of WAL segment " + index + ": " + reason(e), path, unwrap(e));
        }
    }

    /**
     * {@link #installCopy} at a close. Every record is durable in the copy already, so a failure (the directory moved
     * away, say) costs nothing: the next open reads the file, or the copy after a power loss, as after a crash.
     */
    void installCopyAtClose(FileIOFactory io, Path dir, int end) {
        try {
            installCopy(io, dir, end);
        } catch (StorageException e) {
            LOG.warn("the durable copy of WAL segment {} keeps its own name ({}); the next open reads it as after a crash", index, e.getMessage());
        }
    }

    /**
     * Closes the segment; when its copy has its name and the old file no other (a hard link a backup made would see
     * it emptied), truncates the old file first, so the dirty pages of the mapping are dropped, never written back.
     * Call once nothing reads this segment's buffer again: a read of the truncated mapping faults.
     */
    void retire() {
        try {
            if (replacedFileUnnamed) file.truncate(0);
        } catch (IOException | UncheckedIOException e) {
            LOG.warn("cannot truncate the replaced file of WAL segment {}: {}", index, reason(e));
        } finally {
            closeQuietly(this);
        }
    }

    @Override
    public void close() {
        try {
            try {
                synchronized (this) {
                    if (copy != null) copy.close();
                }
            } finally {
                file.close();
            }
        } catch (IOException e) {
            throw new StorageException("cannot close WAL segment " + index, path, e);
        }
    }

    static void closeQuietly(AutoCloseable c) {
        if (c == null) return;
        try {
            c.close();
        } catch (Exception ignored) {
            // already failing; the first error is the one reported
        }
    }

    static IOException unwrap(Exception e) {
        return e instanceof UncheckedIOException ? ((UncheckedIOException) e).getCause() : (IOException) e;
    }

    /** What went wrong, for a message: the IO failure's message, or its kind when it has none (a closed channel). */
    static String reason(Exception e) {
        IOException cause = unwrap(e);
        return cause.getMessage() != null ? cause.getMessage() : cause.toString();
    }

    @Override
    public String toString() {
        return path.toString();
    }

    /**
     * FSYNC's staging copy of the segment, in direct memory: a JVM whose limit cannot hold it refuses the open naming
     * the setting, as for the data region, and as a RuntimeException, so {@link Wal#open} closes the segment it opened.
     */
    static ByteBuffer stagingBuffer(long segmentSize) {
        try {
            return ByteBuffer.allocateDirect((int) segmentSize).order(ByteOrder.LITTLE_ENDIAN);
        } catch (OutOfMemoryError e) {
            throw PageSlots.cannotAllocate("walSegmentSize", segmentSize, e);
        }
    }
}
