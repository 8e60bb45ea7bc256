package dev.varve.checkpoint;

import dev.varve.core.io.Closeables;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.Page;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.function.ToLongFunction;
import java.util.zip.CRC32C;

/**
 * Writes one recovery file: entries are encoded into a direct buffer and written in large sequential chunks, then
 * fsynced by {@link #finish}. An IO error becomes a {@link StorageException} naming the file; the checkpoint
 * that owns the writer is then abandoned.
 *
 * <p>The file is written under a temporary name and {@link #finish} renames it into place ({@link
 * FileIOFactory#atomicMove} fsyncs the directory), so its directory entry is durable before the checkpoint's start
 * marker gets its name. Without that, the entry would become durable only with the start marker's own directory
 * fsync — but a power cut between that rename and that fsync may keep the rename and lose the earlier creation,
 * leaving a start marker without its end whose recovery file is gone, which open refuses (even when asked to
 * truncate the WAL). A crash before the rename leaves only a temporary file, which {@link
 * CheckpointMarkers#deleteBefore} removes.
 */
final class RecoveryFileWriter implements AutoCloseable {
    private static final int CHUNK = 1 << 20;
    private static final String TEMP_SUFFIX = ".tmp";
    private final FileIOFactory io;
    private final Path path;
    private final FileIO file;
    private final PageCodec codec;
    private final ToLongFunction<Page> unusedRange;
    private final ByteBuffer chunk = ByteBuffer.allocateDirect(CHUNK).order(ByteOrder.LITTLE_ENDIAN);
    private final ByteBuffer encoded;
    private final CRC32C crc = new CRC32C();
    private long position;
    private int entries;

    RecoveryFileWriter(FileIOFactory io, Path path, long checkpointId, int pageSize, PageCodec codec, ToLongFunction<Page> unusedRange) {
        this.codec = codec;
        this.unusedRange = unusedRange;
        this.encoded = ByteBuffer.allocateDirect(PageCodec.maxEncodedBytes(pageSize));
        this.io = io;
        this.path = path;
        FileIO opened = null;
        try {
            opened = io.open(tempPath(path), true);
            opened.truncate(0);
        } catch (IOException e) {
            // the caller's try-with-resources closes only a constructed writer: a file opened here and refused is
            // closed here, or each failed checkpoint thread keeps a descriptor (and the deleted temp file's space)
            Closeables.closeAfter(e, opened);
            throw new StorageException("cannot create recovery file: " + e.getMessage(), path, e);
        }
        this.file = opened;
        chunk.putLong(RecoveryFileFormat.MAGIC).putInt(RecoveryFileFormat.VERSION).putLong(checkpointId).putInt(pageSize);
        crc.update(chunk.duplicate().flip());
        chunk.putInt((int) crc.getValue());
    }

    /** Appends a page image (its CRC already stamped). */
    void append(long pageId, Page image) {
        int len = codec.encode(image, encoded, unusedRange);
        if (chunk.remaining() < RecoveryFileFormat.ENTRY_HEADER_BYTES + len) flushChunk();
        int start = chunk.position();
        chunk.putLong(pageId).put((byte) codec.ordinal()).putInt(len).putInt(0);
        chunk.put(chunk.position(), encoded, 0, len);
        chunk.position(chunk.position() + len);
        crc.reset();
        ByteBuffer covered = chunk.duplicate();
        covered.position(start).limit(start + RecoveryFileFormat.ENTRY_CRC_OFFSET);
        crc.update(covered);
        covered.limit(chunk.position()).position(start + RecoveryFileFormat.ENTRY_HEADER_BYTES);
        crc.update(covered);
        chunk.putInt(start + RecoveryFileFormat.ENTRY_CRC_OFFSET, (int) crc.getValue());
        entries++;
    }

    private void flushChunk() {
        chunk.flip();
        int n = chunk.remaining();
        try {
            file.write(chunk, position);
        } catch (IOException e) {
            throw new StorageException("recovery file write failed: " + e.getMessage(), file.path(), e);
        }
        position += n;
        chunk.clear();
    }

    /** Writes what is buffered and fsyncs. */
    void finish() {
        flushChunk();
        try {
            file.force();
        } catch (IOException e) {
            throw new StorageException("recovery file fsync failed: " + e.getMessage(), file.path(), e);
        }
        try {
            io.atomicMove(tempPath(path), path); // its entry durable before the start marker's (see the class comment)
        } catch (IOException e) {
            throw new StorageException("cannot name recovery file: " + e.getMessage(), path, e);
        }
    }

    /** Where the recovery file {@code path} is written until {@link #finish} names it. */
    static Path tempPath(Path path) {
        return path.resolveSibling(path.getFileName() + TEMP_SUFFIX);
    }

    int entries() {
        return entries;
    }

    long bytes() {
        return position + chunk.position();
    }

    @Override
    public void close() {
        try {
            file.close();
        } catch (IOException e) {
            throw new StorageException("cannot close recovery file", file.path(), e);
        }
    }
}
