package dev.varve.snapshot;

import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * {@code capture-counts.bin} in the archive directory: the capture bytes per live snapshot of the part of the level-1
 * Maplog that reclamation deleted. Recovery recounts every snapshot's archive bytes from the level-1 Maplog, which
 * records every capture, but an upper-rank snapshot is read through its own level, so the level-1 portions holding its
 * captures go once the rank-1 snapshots after it move on; the upper levels' Maplogs cannot stand in (their mappings do
 * not say which snapshot a pre-state was first captured for). Reclamation counts a portion into this file, whole and
 * durable in one rename, before it deletes it; recovery takes these counts and recounts from the file's position on.
 * Only live snapshots are kept, so it follows the live snapshots, not the history. A damaged or missing file (a store
 * of an earlier build) costs only figures: the part it would have counted is not counted, as before it existed.
 *
 * <pre>
 * magic (long) | version (int) | levels (int) | position (long) | entries (int) |
 * lastPack (long x levels+1) | lastInPack (long x levels+1) | entries x (id long, bytes long) | crc32c (int) of all before
 * </pre>
 * Little-endian.
 */
final class CaptureCountsFile {
    static final String FILE = "capture-counts.bin";
    private static final long MAGIC = 0x5641525645434331L; // "VARVECC1"
    private static final int VERSION = 1;
    private static final Logger LOG = LoggerFactory.getLogger(CaptureCountsFile.class);

    /** Counts of the level-1 Maplog below {@code position}, and the packs met last there ({@link CaptureTally}). */
    record Saved(long position, Map<Long, Long> counts, long[] lastPack, long[] lastInPack) {
        static Saved none(int levels) {
            long[] packs = new long[levels + 1];
            Arrays.fill(packs, -1);
            return new Saved(0, new TreeMap<>(), packs, new long[levels + 1]);
        }
    }

    private CaptureCountsFile() {
    }

    /** What {@code archiveDir} holds; {@link Saved#none} when nothing usable (a damaged file is logged, naming it). */
    static Saved read(FileIOFactory io, Path archiveDir, int levels) {
        Path file = archiveDir.resolve(FILE);
        if (!io.exists(file)) return Saved.none(levels);
        try (FileIO f = io.open(file, false)) {
            long size = f.size();
            if (size < 32 || size > Integer.MAX_VALUE) return damaged(file, "holds " + size + " bytes", levels);
            ByteBuffer b = ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
            f.read(b, 0);
            b.flip();
            if (b.limit() != size) return damaged(file, "reads " + b.limit() + " of its " + size + " bytes", levels);
            CRC32C crc = new CRC32C();
            crc.update(b.array(), 0, (int) size - 4);
            if ((int) crc.getValue() != b.getInt((int) size - 4)) return damaged(file, "fails its checksum at offset " + (size - 4), levels);
            if (b.getLong() != MAGIC || b.getInt() != VERSION) return damaged(file, "is not a capture counts file of version " + VERSION, levels);
            int k = b.getInt();
            long position = b.getLong();
            int entries = b.getInt();
            if (k < 1 || k > 64 || entries < 0 || size != 28 + 16L * (k + 1) + 16L * entries + 4) {
                return damaged(file, "records " + k + " levels and " + entries + " entries in " + size + " bytes", levels);
            }
            long[] packs = new long[k + 1];
            long[] inPacks = new long[k + 1];
            for (int i = 0; i <= k; i++) packs[i] = b.getLong();
            for (int i = 0; i <= k; i++) inPacks[i] = b.getLong();
            Map<Long, Long> counts = new TreeMap<>();
            for (int i = 0; i < entries; i++) counts.put(b.getLong(), b.getLong());
            return new Saved(position, counts, packs, inPacks);
        } catch (IOException e) {
            throw new StorageException("cannot read the archive's capture counts: " + e.getMessage(), file, e);
        }
    }

    /** Said, not thrown: the file holds figures only, and the store reads right without it. */
    private static Saved damaged(Path file, String what, int levels) {
        LOG.warn("archive file {} {}: upper-rank snapshots' archive bytes are counted without it and may read low", file, what);
        return Saved.none(levels);
    }

    /** Replaces what {@code archiveDir} holds with {@code saved}, whole and durable. */
    static void write(FileIOFactory io, Path archiveDir, Saved saved) {
        int k = saved.lastPack().length - 1;
        int size = 28 + 16 * (k + 1) + 16 * saved.counts().size() + 4;
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(MAGIC).putInt(VERSION).putInt(k).putLong(saved.position()).putInt(saved.counts().size());
        for (long p : saved.lastPack()) b.putLong(p);
        for (long p : saved.lastInPack()) b.putLong(p);
        for (var e : saved.counts().entrySet()) b.putLong(e.getKey()).putLong(e.getValue());
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, size - 4);
        b.putInt((int) crc.getValue());
        b.flip();
        Path file = archiveDir.resolve(FILE);
        try {
            DurableFiles.replace(io, file, f -> f.write(b.duplicate(), 0)).close();
        } catch (IOException e) {
            throw new StorageException("cannot write the archive's capture counts: " + e.getMessage(), file, e);
        }
    }
}
