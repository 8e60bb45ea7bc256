package dev.varve.checkpoint;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.zip.CRC32C;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Checkpoint start and end markers: what is written reads back field for field, the directory answers which
 * checkpoints started and ended, and a damaged marker is refused with its file and the offset of what is wrong.
 */
@Timeout(60)
class CheckpointMarkersTest {
    @TempDir
    Path dir;

    private CheckpointMarkers markers() {
        return new CheckpointMarkers(FileIOFactory.standard(), dir);
    }

    private static CheckpointMarker start(long id) {
        return new CheckpointMarker(CheckpointMarker.START, id, 10_000 * id, 10_000 * (id - 1), CheckpointMarker.RECOVERY_FILES,
                PageCodec.SNAPPY.ordinal(), new int[]{3, 0, 12}, new long[]{4_000, 28, 50_000});
    }

    private static CheckpointMarker end(long id) {
        return new CheckpointMarker(CheckpointMarker.END, id, 10_000 * id, 10_000 * (id - 1), CheckpointMarker.NO_RECOVERY_DATA,
                0, new int[0], new long[0]);
    }

    @Test
    void deleteBeforeRemovesTheStoresOldFilesAndLeavesAnOperatorsCopies() throws IOException {
        CheckpointMarkers m = markers();
        m.write(start(1));
        m.write(end(1));
        Files.write(m.recoveryFilePath(1, 0), new byte[]{1});
        Files.write(dir.resolve(m.endPath(1).getFileName() + ".tmp"), new byte[]{1}); // a marker write a crash cut short
        Path copy = Files.copy(m.endPath(1), dir.resolve(m.endPath(1).getFileName() + ".bak"));
        Path note = Files.writeString(dir.resolve("cp-0000000000000001-notes.txt"), "kept by the operator");
        m.write(start(2));
        m.write(end(2));
        m.deleteBefore(2);
        assertTrue(Files.exists(copy), "an operator's copy of an old marker is not the store's to delete");
        assertTrue(Files.exists(note));
        assertTrue(Files.notExists(m.startPath(1)) && Files.notExists(m.endPath(1)) && Files.notExists(m.recoveryFilePath(1, 0)));
        assertTrue(Files.notExists(dir.resolve(m.endPath(1).getFileName() + ".tmp")));
        assertEquals(2, m.latestEnd());
    }

    @Test
    void markersReadBackFieldForField() {
        CheckpointMarkers m = markers();
        assertEquals(Optional.empty(), m.latestStart());
        assertEquals(-1, m.latestEnd());
        m.write(start(1));
        m.write(end(1));
        m.write(start(2));
        CheckpointMarker s = m.latestStart().orElseThrow();
        assertEquals(start(2), s);
        assertEquals(2, s.id());
        assertEquals(20_000, s.markLsn());
        assertEquals(10_000, s.prevMarkLsn());
        assertEquals(CheckpointMarker.RECOVERY_FILES, s.recoveryData());
        assertEquals(PageCodec.SNAPPY.ordinal(), s.compression());
        assertArrayEquals(new int[]{3, 0, 12}, s.fileEntries());
        assertArrayEquals(new long[]{4_000, 28, 50_000}, s.fileBytes());
        assertEquals(1, m.latestEnd());
        assertEquals(Optional.of(end(1)), m.end(1));
        assertEquals(Optional.empty(), m.end(2), "checkpoint 2 has not ended");
        assertEquals(Optional.of(start(1)), m.start(1));
        assertTrue(Files.exists(m.startPath(2)) && !Files.exists(dir.resolve(m.startPath(2).getFileName() + ".tmp")),
                "written through a temp file that is gone after the rename");
    }

    /**
     * An end marker carries the store id and each page file's generation, which open checks the page files against,
     * and every marker the largest value the store was given; markers of the earlier formats still read: version 2
     * (without the largest value) as not recording it, version 1 (without any of the three) naming no store either.
     */
    @Test
    void anEndMarkerCarriesTheStoreIdThePageFileGenerationsAndTheLargestValueAndOlderOnesStillRead() throws IOException {
        CheckpointMarkers m = markers();
        java.util.Map<Integer, Long> generations = java.util.Map.of(0, 3L, 65_536, 7L, 65_537, 5L);
        CheckpointMarker e = new CheckpointMarker(CheckpointMarker.END, 7, 70_000, 60_000, CheckpointMarker.NO_RECOVERY_DATA, 0,
                new int[0], new long[0], 0x1234_5678_9abc_def0L, generations, 70_001);
        m.write(start(7));
        m.write(e);
        CheckpointMarker read = m.end(7).orElseThrow();
        assertEquals(e, read);
        assertEquals(0x1234_5678_9abc_def0L, read.storeId());
        assertEquals(generations, read.generations());
        assertEquals(70_001, read.largestValue());
        // the same end marker as version 2 wrote it: without the largest value before the CRC
        byte[] v3 = Files.readAllBytes(m.endPath(7));
        Files.write(m.endPath(7), olderVersion(v3, 2, v3.length - 4));
        CheckpointMarker v2 = m.end(7).orElseThrow();
        assertEquals(generations, v2.generations());
        assertEquals(CheckpointMarker.LARGEST_VALUE_UNKNOWN, v2.largestValue());
        // the same start marker as version 1 wrote it: the fields up to the recovery files, then the CRC
        Files.write(m.startPath(7), olderVersion(Files.readAllBytes(m.startPath(7)), 1, 52 + 12 * 3 + 4));
        CheckpointMarker old = m.start(7).orElseThrow();
        assertEquals(start(7), old);
        assertEquals(0, old.storeId());
        assertEquals(null, old.generations());
        assertEquals(CheckpointMarker.LARGEST_VALUE_UNKNOWN, old.largestValue());
    }

    /** {@code marker}'s first {@code length - 4} bytes as format {@code version}, with their CRC after them. */
    private static byte[] olderVersion(byte[] marker, int version, int length) {
        byte[] older = java.util.Arrays.copyOf(marker, length);
        ByteBuffer b = ByteBuffer.wrap(older).order(ByteOrder.LITTLE_ENDIAN).putInt(8, version);
        CRC32C crc = new CRC32C();
        crc.update(older, 0, older.length - 4);
        b.putInt(older.length - 4, (int) crc.getValue());
        return older;
    }

    @Test
    void deleteBeforeKeepsTheLatestCheckpointsMarkersOnly() throws IOException {
        CheckpointMarkers m = markers();
        m.write(start(1));
        m.write(end(1));
        m.write(start(2));
        m.write(end(2));
        Files.write(m.recoveryFilePath(2, 0), new byte[28]);
        Files.write(dir.resolve("cp-0000000000000003-start.bin.tmp"), new byte[3]);
        m.deleteBefore(2);
        assertEquals(Optional.empty(), m.start(1));
        assertEquals(Optional.empty(), m.end(1));
        assertEquals(Optional.of(start(2)), m.start(2));
        assertTrue(!Files.exists(m.recoveryFilePath(2, 0)), "the ended checkpoint's recovery files go too");
        assertEquals(2, m.latestStart().orElseThrow().id(), "a leftover temp file is no marker and is deleted");
    }

    @Test
    void aFlippedByteFailsTheChecksumAtItsOffset() throws IOException {
        CheckpointMarkers m = markers();
        m.write(start(4));
        Path file = m.startPath(4);
        RecoveryFileRoundTripTest.flip(file, 30); // inside markLsn
        CorruptionException e = assertThrows(CorruptionException.class, m::latestStart);
        assertEquals(file, e.file());
        assertEquals(Files.size(file) - 4, e.offset(), "the checksum field: " + e.getMessage());
        assertTrue(e.getMessage().contains("checksum mismatch"), e.getMessage());
    }

    @Test
    void aTruncatedMarkerIsRefused() throws IOException {
        CheckpointMarkers m = markers();
        m.write(end(5));
        Path file = m.endPath(5);
        Files.write(file, new byte[20]);
        CorruptionException e = assertThrows(CorruptionException.class, () -> m.end(5));
        assertEquals(file, e.file());
        assertEquals(0, e.offset());
        assertTrue(e.getMessage().contains("truncated (20 bytes)"), e.getMessage());
    }

    /** Damage the checksum cannot see (a marker written by a foreign or future writer) is refused field by field. */
    @Test
    void wellSummedButWrongFieldsAreReportedAtTheirOffsets() throws IOException {
        CheckpointMarkers m = markers();
        m.write(start(6));
        Path file = m.startPath(6);
        byte[] good = Files.readAllBytes(file);

        Files.write(file, resummed(good, b -> b.putLong(0, 0x1234L)));
        assertEquals(0, assertThrows(CorruptionException.class, () -> m.start(6)).offset(), "magic");

        Files.write(file, resummed(good, b -> b.putInt(8, 99)));
        CorruptionException version = assertThrows(CorruptionException.class, () -> m.start(6));
        assertEquals(8, version.offset());
        assertTrue(version.getMessage().contains("unsupported checkpoint marker version 99"), version.getMessage());

        Files.write(file, resummed(good, b -> b.putInt(48, 4))); // lists 4 files, holds 3
        assertEquals(48, assertThrows(CorruptionException.class, () -> m.start(6)).offset(), "file count");

        Files.write(file, resummed(good, b -> b.putLong(16, 7))); // the id of another checkpoint
        CorruptionException name = assertThrows(CorruptionException.class, () -> m.start(6));
        assertTrue(name.getMessage().contains("does not match its file name"), name.getMessage());

        Files.write(file, resummed(good, b -> b.putInt(12, CheckpointMarker.END))); // an end marker under a start name
        assertThrows(CorruptionException.class, () -> m.start(6));
    }

    /** A copy of {@code marker} changed by {@code change} with its CRC32C recomputed. */
    private static byte[] resummed(byte[] marker, java.util.function.Consumer<ByteBuffer> change) {
        byte[] b = marker.clone();
        ByteBuffer buf = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        change.accept(buf);
        CRC32C crc = new CRC32C();
        crc.update(b, 0, b.length - 4);
        buf.putInt(b.length - 4, (int) crc.getValue());
        return b;
    }
}
