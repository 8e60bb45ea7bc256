package dev.varve.core.io;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * The seam every file of the store goes through (BookKeeper's {@code FileChannelProvider} idea): page files, WAL
 * segments, markers, recovery files. Tests swap in an implementation that drops unsynced writes, tears writes at
 * sector boundaries and fails fsync. Positional IO only; implementations are safe for concurrent positional calls.
 */
public interface FileIO extends Closeable {
    /** The file's path, for messages. */
    Path path();

    /** Reads until {@code dst} is full or end of file; returns the bytes read. */
    int read(ByteBuffer dst, long position) throws IOException;

    /** Writes all of {@code src} at {@code position}. */
    void write(ByteBuffer src, long position) throws IOException;

    /** Makes every write so far durable (fsync, data and size). */
    void force() throws IOException;

    /**
     * Makes every write so far durable but not the file's timestamps ({@code fdatasync}), for a file whose size does
     * not change, the WAL's. On ext4 an {@code fsync} after a write also commits the journal for the new modification
     * time, and in the default {@code data=ordered} mode a journal commit first writes out the data of every file with
     * blocks allocated since the last one (the page files a checkpoint is writing): a commit can wait for the
     * checkpoint's writes. Implementations that cannot tell the two apart force everything.
     */
    default void forceData() throws IOException {
        force();
    }

    /**
     * Copies the bytes at {@code position} into {@code dst} (until it is full, advancing it) from a read-only mapping of
     * the file's first {@code sealed} bytes — bytes the caller knows never change again, a filled archive segment — and
     * returns true; returns false, having read nothing, where this file is not mapped: the default, Java before 22
     * (which unmaps only through a garbage collection), a file shorter than {@code sealed}, or a range past it. The
     * caller then reads through {@link #read}.
     */
    default boolean readMapped(ByteBuffer dst, long position, long sealed) throws IOException {
        return false;
    }

    /** Current size in bytes. */
    long size() throws IOException;

    /** Cuts the file to {@code size} bytes. */
    void truncate(long size) throws IOException;

    /** Maps {@code length} bytes at {@code position} read-write, growing the file if needed. */
    MappedRegion map(long position, int length) throws IOException;

    @Override
    void close() throws IOException;
}
