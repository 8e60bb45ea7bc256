package dev.varve.checkpoint;

import dev.varve.core.io.CorruptionException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * A checkpoint start or end marker: one small file, written to a temp name, fsynced and renamed, so it is either
 * wholly there or not at all. A start marker without its end means the crash hit the checkpoint's page writes.
 *
 * <pre>
 *  0       8        12     16      24        32            40            44           48          52
 * +-------+--------+------+-------+---------+-------------+-------------+------------+-----------+-- files --+-------+
 * | magic | version| kind | id    | markLsn | prevMarkLsn | recoveryData| compression| fileCount | n x 12    | crc32c|
 * +-------+--------+------+-------+---------+-------------+-------------+------------+-----------+-----------+-------+
 *   per recovery file: int entries, long bytes
 * </pre>
 * Version 2 adds, after the recovery files and before the CRC: {@code storeId} (long) and the page file generations
 * ({@code int count}, -1 for none, then per page file {@code int fileId, long generation}); version 3 then
 * {@code largestValue} (int).
 * Format versions: 1 — initial layout; 2 — the store id, and an end marker's page file generations; 3 — the largest
 * value.
 *
 * @param kind          {@link #START} or {@link #END}
 * @param id            checkpoint id, increasing from 1
 * @param markLsn       WAL position of the checkpoint mark: the page store holds exactly the writes before it
 * @param prevMarkLsn   mark of the previous checkpoint: physical restore replays page records from there
 * @param recoveryData  how torn pages of this checkpoint are restored: {@link #RECOVERY_FILES} or {@link #PHYSICAL_WAL}
 * @param compression   recovery-file compression code ({@link PageCodec} ordinal)
 * @param fileEntries   entries per recovery file
 * @param fileBytes     bytes per recovery file
 * @param storeId       the store's id, 0 in a version 1 marker
 * @param generations   an end marker's table of page file id to the last checkpoint that wrote it (every file a
 *                      completed checkpoint wrote), null in a start marker and a version 1 one
 * @param largestValue  bytes of the longest value the store had been given up to the marker's writing, removed ones
 *                      too (at least every value the page files hold at the mark): recovery bounds the overflow chain
 *                      a replayed operation may free by it; {@link #LARGEST_VALUE_UNKNOWN} in a version 1 or 2 marker and
 *                      in those of a store loaded from a snapshot image
 */
public record CheckpointMarker(int kind, long id, long markLsn, long prevMarkLsn, int recoveryData, int compression,
                               int[] fileEntries, long[] fileBytes, long storeId, Map<Integer, Long> generations,
                               int largestValue) {
    static final long MAGIC = 0x5641525645435031L; // "VARVECP1"
    static final int VERSION = 3;
    /** {@link #largestValue} of a marker that does not record it (written before version 3). */
    public static final int LARGEST_VALUE_UNKNOWN = -1;
    /** Marker kind: the checkpoint began writing pages. */
    public static final int START = 1;
    /** Marker kind: every page of the checkpoint is written and fsynced. */
    public static final int END = 2;
    /** Recovery data: none recorded (end markers). */
    public static final int NO_RECOVERY_DATA = 0;
    /** Recovery data: page images in the checkpoint's recovery files. */
    public static final int RECOVERY_FILES = 1;
    /** Recovery data: physical page records in the WAL since {@code prevMarkLsn}. */
    public static final int PHYSICAL_WAL = 2;
    private static final int FIXED = 52;

    public CheckpointMarker {
        generations = generations == null ? null : Collections.unmodifiableMap(new TreeMap<>(generations));
    }

    /** A marker that names no store, no generations and no largest value (as a version 1 one). */
    public CheckpointMarker(int kind, long id, long markLsn, long prevMarkLsn, int recoveryData, int compression, int[] fileEntries, long[] fileBytes) {
        this(kind, id, markLsn, prevMarkLsn, recoveryData, compression, fileEntries, fileBytes, 0, null, LARGEST_VALUE_UNKNOWN);
    }

    /** This marker recording {@code bytes} as the largest value. */
    public CheckpointMarker withLargestValue(int bytes) {
        return new CheckpointMarker(kind, id, markLsn, prevMarkLsn, recoveryData, compression, fileEntries, fileBytes, storeId, generations, bytes);
    }

    byte[] encode() {
        int gens = generations == null ? 0 : generations.size();
        ByteBuffer b = ByteBuffer.allocate(FIXED + 12 * fileEntries.length + 12 + 12 * gens + 4 + 4).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(MAGIC).putInt(VERSION).putInt(kind).putLong(id).putLong(markLsn).putLong(prevMarkLsn)
                .putInt(recoveryData).putInt(compression).putInt(fileEntries.length);
        for (int i = 0; i < fileEntries.length; i++) b.putInt(fileEntries[i]).putLong(fileBytes[i]);
        b.putLong(storeId).putInt(generations == null ? -1 : gens);
        if (generations != null) for (Map.Entry<Integer, Long> g : generations.entrySet()) b.putInt(g.getKey()).putLong(g.getValue());
        b.putInt(largestValue);
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, b.position());
        b.putInt((int) crc.getValue());
        return b.array();
    }

    static CheckpointMarker decode(byte[] bytes, Path file) {
        if (bytes.length < FIXED + 4) throw new CorruptionException("checkpoint marker truncated (" + bytes.length + " bytes)", file, 0);
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, bytes.length - 4);
        if (b.getInt(bytes.length - 4) != (int) crc.getValue())
            throw new CorruptionException("checkpoint marker checksum mismatch", file, bytes.length - 4);
        if (b.getLong() != MAGIC) throw new CorruptionException("not a checkpoint marker (bad magic)", file, 0);
        int version = b.getInt();
        if (version < 1 || version > VERSION)
            throw new CorruptionException("unsupported checkpoint marker version " + version + " (this build reads 1 to " + VERSION
                    + "): it was written by a newer release", file, 8);
        int kind = b.getInt();
        long id = b.getLong();
        long mark = b.getLong();
        long prev = b.getLong();
        int data = b.getInt();
        int comp = b.getInt();
        int n = b.getInt();
        long files = FIXED + 12L * n + (version == 1 ? 4 : 16);
        if (n < 0 || (version == 1 ? files != bytes.length : files > bytes.length))
            throw new CorruptionException("checkpoint marker lists " + n + " files but has " + bytes.length + " bytes", file, 48);
        int[] entries = new int[n];
        long[] sizes = new long[n];
        for (int i = 0; i < n; i++) {
            entries[i] = b.getInt();
            sizes[i] = b.getLong();
        }
        if (version == 1) return new CheckpointMarker(kind, id, mark, prev, data, comp, entries, sizes);
        long storeId = b.getLong();
        int gens = b.getInt();
        if (gens < -1 || files + 12L * Math.max(gens, 0) + (version == 2 ? 0 : 4) != bytes.length)
            throw new CorruptionException("checkpoint marker lists " + gens + " page file generations but has " + bytes.length + " bytes", file, b.position() - 4);
        Map<Integer, Long> generations = gens < 0 ? null : new TreeMap<>();
        for (int i = 0; i < gens; i++) generations.put(b.getInt(), b.getLong());
        int largest = version == 2 ? LARGEST_VALUE_UNKNOWN : b.getInt();
        if (largest < LARGEST_VALUE_UNKNOWN)
            throw new CorruptionException("checkpoint marker's largest value is " + largest + " bytes", file, b.position() - 4);
        return new CheckpointMarker(kind, id, mark, prev, data, comp, entries, sizes, storeId, generations, largest);
    }

    @Override
    public String toString() {
        return (kind == START ? "start" : "end") + " marker of checkpoint " + id + " (mark " + markLsn + ", previous mark " + prevMarkLsn
                + (kind == START ? ", recovery data " + (recoveryData == RECOVERY_FILES ? fileEntries.length + " recovery files" : "in physical WAL") : "") + ")";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CheckpointMarker m && m.kind == kind && m.id == id && m.markLsn == markLsn && m.prevMarkLsn == prevMarkLsn
                && m.recoveryData == recoveryData && m.compression == compression && java.util.Arrays.equals(m.fileEntries, fileEntries)
                && java.util.Arrays.equals(m.fileBytes, fileBytes) && m.storeId == storeId && Objects.equals(m.generations, generations) && m.largestValue == largestValue;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(id) * 31 + kind;
    }
}
