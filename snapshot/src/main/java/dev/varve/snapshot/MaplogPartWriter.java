package dev.varve.snapshot;

import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * Writes a whole part of a Maplog-format log at once, durably ({@link DurableFiles#replace}): the part a rewrite of a
 * one-part log puts in place of the old one ({@link MaplogFile#compactBefore}, {@link MaplogFile#replaceWith}).
 */
final class MaplogPartWriter {
    /** Entries written a write (64 KiB). */
    private static final int BATCH = 2048;

    /** Entries [from, from + n) of the part being written, into the arrays. */
    interface EntrySource {
        void fill(long from, int n, long[] a, long[] b, long[] c);
    }

    private MaplogPartWriter() {
    }

    /** Writes {@code part} holding {@code header} and the {@code n} entries of {@code source}, replacing any file of that name, and opens it. */
    static FileIO write(FileIOFactory io, Path part, ByteBuffer header, long n, EntrySource source) {
        try {
            return DurableFiles.replace(io, part, f -> {
                f.write(header.duplicate(), 0);
                long[] a = new long[BATCH];
                long[] b = new long[BATCH];
                long[] c = new long[BATCH];
                CRC32C crc = new CRC32C();
                ByteBuffer out = ByteBuffer.allocate(MaplogDescriptor.ENTRY_SIZE * BATCH).order(ByteOrder.LITTLE_ENDIAN);
                for (long at = 0; at < n; at += BATCH) {
                    int k = (int) Math.min(BATCH, n - at);
                    source.fill(at, k, a, b, c);
                    out.clear();
                    for (int i = 0; i < k; i++) MaplogDescriptor.encode(out, i * MaplogDescriptor.ENTRY_SIZE, a[i], b[i], c[i], crc);
                    f.write(out.limit(k * MaplogDescriptor.ENTRY_SIZE), MaplogDescriptor.entryOffset(at));
                }
            });
        } catch (IOException e) {
            throw new StorageException("cannot rewrite archive file: " + e.getMessage(), part, e);
        }
    }
}
