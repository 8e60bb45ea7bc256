package dev.varve.recovery;

import dev.varve.checkpoint.CheckpointMarker;
import dev.varve.checkpoint.CheckpointMarkers;
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
import java.util.zip.CRC32C;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link RecoveryStart}'s decisions from the checkpoint markers alone: where recovery starts in each consistent
 * history, and a refusal naming the missing or damaged file for each history a lost file would fake.
 */
@Timeout(60)
class RecoveryStartTest {
    private static final int PAGE_SIZE = 4096;
    private static final long MARK_1 = 10_000;
    private static final long MARK_2 = 20_000;

    @TempDir
    Path dir;

    private CheckpointMarkers markers() {
        return new CheckpointMarkers(FileIOFactory.standard(), dir);
    }

    private static CheckpointMarker start(long id, long mark, long prevMark, int recoveryData, int files) {
        return new CheckpointMarker(CheckpointMarker.START, id, mark, prevMark, recoveryData, 0, new int[files], filled(files));
    }

    /** Each recovery file is empty: just the 28-byte header. */
    private static long[] filled(int files) {
        long[] b = new long[files];
        java.util.Arrays.fill(b, HEADER_BYTES);
        return b;
    }

    private static CheckpointMarker end(long id, long mark, long prevMark) {
        return new CheckpointMarker(CheckpointMarker.END, id, mark, prevMark, CheckpointMarker.NO_RECOVERY_DATA, 0, new int[0], new long[0]);
    }

    /** The recovery-file header of the on-disk format: magic "VARVERF1", version 1, checkpoint id, page size, CRC32C. */
    private static final long HEADER_BYTES = 28;

    private static void writeEmptyRecoveryFile(Path file, long checkpointId) throws IOException {
        ByteBuffer h = ByteBuffer.allocate((int) HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(0x5641525645524631L).putInt(1).putLong(checkpointId).putInt(PAGE_SIZE);
        CRC32C crc = new CRC32C();
        crc.update(h.array(), 0, 24);
        h.putInt((int) crc.getValue());
        Files.write(file, h.array());
    }

    /** Checkpoint 1 completed, checkpoint 2 (physical WAL) started and was interrupted. */
    private CheckpointMarkers completedThenStarted() {
        CheckpointMarkers m = markers();
        m.write(start(1, MARK_1, 0, CheckpointMarker.PHYSICAL_WAL, 0));
        m.write(end(1, MARK_1, 0));
        m.write(start(2, MARK_2, MARK_1, CheckpointMarker.PHYSICAL_WAL, 0));
        return m;
    }

    @Test
    void aStoreNoCheckpointEverStartedReplaysTheWholeWal() {
        RecoveryStart s = RecoveryStart.decide(markers(), PAGE_SIZE);
        assertNull(s.latest());
        assertFalse(s.interrupted());
        assertEquals(-1, s.neededFrom());
        assertDoesNotThrow(() -> s.checkWalWitness(-1, markers()));
    }

    @Test
    void aCompletedCheckpointStartsReplayAtItsMark() {
        CheckpointMarkers m = completedThenStarted();
        m.write(end(2, MARK_2, MARK_1));
        RecoveryStart s = RecoveryStart.decide(m, PAGE_SIZE);
        assertEquals(2, s.latest().id());
        assertFalse(s.interrupted());
        assertEquals(MARK_2, s.neededFrom());
    }

    @Test
    void anInterruptedPhysicalCheckpointNeedsTheWalFromThePreviousMark() {
        CheckpointMarkers m = completedThenStarted();
        RecoveryStart s = RecoveryStart.decide(m, PAGE_SIZE);
        assertEquals(2, s.latest().id());
        assertTrue(s.interrupted(), "its pages are restored first");
        assertEquals(MARK_1, s.neededFrom(), "page images are replayed from the previous mark");
    }

    @Test
    void anInterruptedCheckpointWithRecoveryFilesNeedsTheWalFromItsOwnMark() throws IOException {
        CheckpointMarkers m = markers();
        m.write(start(1, MARK_1, 0, CheckpointMarker.RECOVERY_FILES, 2));
        writeEmptyRecoveryFile(m.recoveryFilePath(1, 0), 1);
        writeEmptyRecoveryFile(m.recoveryFilePath(1, 1), 1);
        RecoveryStart s = RecoveryStart.decide(m, PAGE_SIZE);
        assertTrue(s.interrupted());
        assertEquals(MARK_1, s.neededFrom(), "the recovery files hold the pages at the mark");
    }

    @Test
    void anEndMarkerWithoutItsStartIsALostStartMarker() {
        CheckpointMarkers m = markers();
        m.write(start(1, MARK_1, 0, CheckpointMarker.PHYSICAL_WAL, 0));
        m.write(end(1, MARK_1, 0));
        m.write(end(2, MARK_2, MARK_1));
        CorruptionException e = assertThrows(CorruptionException.class, () -> RecoveryStart.decide(m, PAGE_SIZE));
        assertEquals(m.startPath(2), e.file());
        assertTrue(e.getMessage().contains("start marker"), e.getMessage());
    }

    @Test
    void anInterruptedCheckpointWhoseRecoveryFileIsGoneIsALostEndMarker() throws IOException {
        CheckpointMarkers m = markers();
        m.write(start(1, MARK_1, 0, CheckpointMarker.RECOVERY_FILES, 2));
        writeEmptyRecoveryFile(m.recoveryFilePath(1, 0), 1);
        CorruptionException e = assertThrows(CorruptionException.class, () -> RecoveryStart.decide(m, PAGE_SIZE));
        assertEquals(m.recoveryFilePath(1, 1), e.file());
        assertTrue(e.getMessage().contains("either the end marker or the recovery file was lost"), e.getMessage());
    }

    @Test
    void aDamagedRecoveryFileStopsTheOpenBeforeAnyRestore() throws IOException {
        CheckpointMarkers m = markers();
        m.write(start(1, MARK_1, 0, CheckpointMarker.RECOVERY_FILES, 1));
        Path file = m.recoveryFilePath(1, 0);
        writeEmptyRecoveryFile(file, 1);
        byte[] b = Files.readAllBytes(file);
        b[20] ^= 1; // the page size field
        Files.write(file, b);
        CorruptionException e = assertThrows(CorruptionException.class, () -> RecoveryStart.decide(m, PAGE_SIZE));
        assertEquals(file, e.file());
        assertEquals(24, e.offset(), "the header checksum: " + e.getMessage());
    }

    @Test
    void aDamagedStartMarkerIsReportedWithItsFileAndOffset() throws IOException {
        CheckpointMarkers m = markers();
        m.write(start(1, MARK_1, 0, CheckpointMarker.PHYSICAL_WAL, 0));
        Path file = m.startPath(1);
        byte[] b = Files.readAllBytes(file);
        b[25] ^= 0x10; // inside markLsn
        Files.write(file, b);
        CorruptionException e = assertThrows(CorruptionException.class, () -> RecoveryStart.decide(m, PAGE_SIZE));
        assertEquals(file, e.file());
        assertEquals(b.length - 4, e.offset());
    }

    @Test
    void aCheckpointTheWalSaysStartedNeedsItsStartMarker() {
        CheckpointMarkers m = markers();
        m.write(start(1, MARK_1, 0, CheckpointMarker.PHYSICAL_WAL, 0));
        m.write(end(1, MARK_1, 0));
        RecoveryStart s = RecoveryStart.decide(m, PAGE_SIZE);
        assertDoesNotThrow(() -> s.checkWalWitness(1, m));
        CorruptionException e = assertThrows(CorruptionException.class, () -> s.checkWalWitness(2, m));
        assertEquals(m.startPath(2), e.file());
        assertTrue(e.getMessage().contains("checkpoint 2 began writing pages"), e.getMessage());
        CheckpointMarkers empty = new CheckpointMarkers(FileIOFactory.standard(), dir.resolve("empty"));
        RecoveryStart fresh = RecoveryStart.decide(empty, PAGE_SIZE);
        CorruptionException none = assertThrows(CorruptionException.class, () -> fresh.checkWalWitness(1, empty),
                "with no start marker at all, any witnessed checkpoint lost its marker");
        assertEquals(empty.startPath(1), none.file());
    }

    @Test
    void walDamageInARestoresPartIsExplainedAsALostEndMarker() {
        CheckpointMarkers m = completedThenStarted();
        RecoveryStart interrupted = RecoveryStart.decide(m, PAGE_SIZE);
        CorruptionException walDamage = new CorruptionException("segment missing", dir.resolve("wal-0.log"), 64);
        CorruptionException explained = interrupted.explain(walDamage, m);
        assertEquals(walDamage.file(), explained.file());
        assertEquals(64, explained.offset());
        assertSame(walDamage, explained.getCause());
        assertTrue(explained.getMessage().contains("either the end marker or the WAL was lost"), explained.getMessage());

        m.write(end(2, MARK_2, MARK_1));
        assertSame(walDamage, RecoveryStart.decide(m, PAGE_SIZE).explain(walDamage, m), "a completed checkpoint explains nothing");
    }
}
