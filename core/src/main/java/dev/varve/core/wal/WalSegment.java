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

/**
 * One WAL segment file, mapped whole, or — the segment an FSYNC WAL appends to — {@linkplain #staged staged}: its
 * records are written into a buffer of the process and reach the file by one {@code pwrite} of the forced range
 * ({@link #force}).
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
    private static final byte[] ZEROS = new byte[4096];
    private static final int PREALLOCATE_CHUNK_BYTES = 1 << 20;

    final long index;
    /** The file: under its temporary name until {@link #name} gives it the segment's (messages only read it). */
    volatile Path path;
    private final FileIO file;
    /** The mapping writes go to; null when staged. */
    private final MappedRegion region;
    /**
     * The whole segment, little-endian; position/limit of this instance are never changed. Staged: the process's
     * copy, which holds what was written to the file (or is about to be) in [0, the WAL's end offset) and anything
     * beyond it, which is never forced.
     */
    final ByteBuffer buffer;

    private WalSegment(long index, Path path, FileIO file, MappedRegion region) {
        this.index = index;
        this.path = path;
        this.file = file;
        this.region = region;
        this.buffer = region.buffer().duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    private WalSegment(WalSegment mapped, ByteBuffer staging) {
        this.index = mapped.index;
        this.path = mapped.path;
        this.file = mapped.file;
        this.region = null;
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
    static WalSegment create(FileIOFactory io, Path dir, long index, long segmentSize, WalSyncMode mode, long storeId) {
        prepareFile(io, dir, index, segmentSize, mode, storeId);
        return install(io, dir, index, segmentSize);
    }

    /**
     * The slow half of {@link #create}, which {@link WalSegmentPreparer} runs ahead of time: writes segment
     * {@code index} under its temporary name with every block allocated, the header (recording {@code mode}, which every
     * record of the segment is written under, and {@code storeId}, the store's durable id or 0) forced and the name durable. A
     * crash leaves only a temporary file, which open deletes. The name is made durable here, not only at the rename:
     * the old segment's seal names this file before the rename does, and a power cut between the two must not keep
     * the seal and lose the file (where a new entry is durable only once its directory is fsynced), which open
     * refuses as a lost segment.
     */
    static void prepareFile(FileIOFactory io, Path dir, long index, long segmentSize, WalSyncMode mode, long storeId) {
        Path temp = tempPath(dir, index);
        try (FileIO tempFile = io.open(temp, true)) {
            tempFile.truncate(0); // a leftover from a crashed creation may hold anything
            ByteBuffer zeros = ByteBuffer.allocate((int) Math.min(segmentSize, PREALLOCATE_CHUNK_BYTES));
            for (long p = 0; p < segmentSize; p += zeros.capacity()) {
                tempFile.write(zeros.clear().limit((int) Math.min(zeros.capacity(), segmentSize - p)), p);
            }
            ByteBuffer header = ByteBuffer.allocate(WalSegmentDescriptor.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            WalSegmentDescriptor.writeHeader(header, segmentSize, index, mode, storeId);
            tempFile.write(header, 0);
            tempFile.force();
            io.forceDirectory(dir);
        } catch (IOException | UncheckedIOException e) {
            throw new StorageException("cannot create WAL segment " + index + ": " + unwrap(e).getMessage(), dir.resolve(WalSegmentDescriptor.fileName(index)), unwrap(e));
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
            throw new StorageException("cannot write the header of WAL segment " + index + ": " + unwrap(e).getMessage(), tempPath(dir, index), unwrap(e));
        }
    }

    /** The fast half of {@link #create}: gives the prepared file its segment name (directory entry durable) and maps it. */
    static WalSegment install(FileIOFactory io, Path dir, long index, long segmentSize) {
        rename(io, dir, index);
        return openPrepared(io, dir.resolve(WalSegmentDescriptor.fileName(index)), index, segmentSize);
    }

    /** Where segment {@code index} is prepared, and written until it is named (see {@link WalSegmentCloser}). */
    static Path tempPath(Path dir, long index) {
        return dir.resolve(WalSegmentDescriptor.fileName(index) + WalSegmentDescriptor.TEMP_SUFFIX);
    }

    /**
     * Maps a file {@link #prepareFile} wrote, under whichever name it has now; a failure names the segment's file (the
     * message says which name it had).
     */
    static WalSegment openPrepared(FileIOFactory io, Path path, long index, long segmentSize) {
        Path named = path.resolveSibling(WalSegmentDescriptor.fileName(index));
        WalSegment seg;
        try {
            seg = open(io, path, index, segmentSize);
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
            throw new StorageException("cannot name WAL segment " + index + ": " + unwrap(e).getMessage(), named, unwrap(e));
        }
    }

    /**
     * Opens and maps an existing segment file without checking its records. Returns null when the file does not have
     * {@code segmentSize} bytes; throws when it is a valid segment of another size (the size cannot change).
     */
    static WalSegment open(FileIOFactory io, Path path, long index, long segmentSize) {
        FileIO file = openFile(io, path, index, segmentSize);
        if (file == null) return null;
        try {
            return new WalSegment(index, path, file, map(file, segmentSize));
        } catch (IOException | UncheckedIOException e) {
            closeQuietly(file);
            throw new StorageException("cannot open WAL segment " + index + ": " + unwrap(e).getMessage(), path, unwrap(e));
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
            throw new StorageException("cannot open WAL segment " + index + ": " + unwrap(e).getMessage(), path, unwrap(e));
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
     * tail by FSYNC's rule ({@link WalOpenScan#scanRecords}), and that rule judges this segment whichever mode reopens
     * it: its header records FSYNC (format 2 on; a writable open never appends to a segment of another mode or of
     * format 1, {@link WalOpenSwitch}). Where the range starts mid-sector, after records an earlier force made
     * durable, the disk rewrites that sector with those records' bytes unchanged: kept or lost, it leaves them whole.
     */
    void force(int from, int to) {
        if (to <= from) return;
        try {
            if (region != null) {
                region.force(from, to - from);
            } else {
                file.write(buffer.duplicate().limit(to).position(from), from);
                file.forceData(); // the size never changes: a segment is created whole
            }
        } catch (IOException | UncheckedIOException e) {
            throw new StorageException("cannot force WAL segment " + index + " bytes [" + from + ", " + to + "): " + unwrap(e).getMessage(),
                    path, unwrap(e));
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

    @Override
    public void close() {
        try {
            file.close();
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
