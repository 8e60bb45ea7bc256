package dev.varve.core.wal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** An IOException from the file seam fails the operation naming the file, and the WAL refuses further appends. */
@Timeout(180)
class WalFailureTest {
    @TempDir
    Path dir;

    private final CountingFaultyFileIOFactory io = new CountingFaultyFileIOFactory();

    private static void assertRefusesAppends(Wal wal, Path file) {
        StorageException e = assertThrows(StorageException.class, () -> wal.append(1, ByteBuffer.allocate(4)));
        assertTrue(e.getMessage().contains("failed earlier"), e.getMessage());
        assertEquals(file, e.file());
    }

    @Test
    void failedFsyncFailsTheCommitNamingTheSegmentAndLaterAppendsAreRefused() {
        try (Wal wal = Wal.open(dir, io, WalTestSupport.SEGMENT_SIZE, WalSyncMode.FSYNC, null)) {
            long lsn = wal.append(1, ByteBuffer.allocate(10));
            io.failForce = true;
            StorageException e = assertThrows(StorageException.class, () -> wal.commit(lsn));
            Path segment = WalTestSupport.segmentFile(dir, 0);
            assertEquals(segment, e.file());
            assertTrue(e.getMessage().contains(segment.toString()), e.getMessage());
            assertTrue(e.getCause().getMessage().contains("injected fsync failure"));
            assertEquals(e, wal.failure());
            assertRefusesAppends(wal, segment);
            assertThrows(StorageException.class, wal::force);
            io.failForce = false; // a healed disk does not revive a WAL that failed
            assertRefusesAppends(wal, segment);
        }
        try (Wal wal = Wal.open(dir, FileIOFactory.standard(), WalTestSupport.SEGMENT_SIZE, WalSyncMode.FSYNC, null)) {
            assertEquals(1, WalTestSupport.readAll(wal, wal.firstLsn()).size(), "reopening recovers");
        }
    }

    @Test
    void failedWriteWhileCreatingTheNextSegmentFailsTheAppendAndLaterAppendsAreRefused() {
        long lsn;
        try (Wal wal = Wal.open(dir, io, WalTestSupport.SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            lsn = wal.append(1, ByteBuffer.allocate(40_000)); // past half: segment 1 is prepared ahead, and deleted at close
        }
        assertFalse(Files.exists(dir.resolve(WalSegmentDescriptor.fileName(1) + WalSegmentDescriptor.TEMP_SUFFIX)));
        io.failWrite = true; // disk full: the reopened WAL has no segment prepared, and preallocating segment 1 fails
        try (Wal wal = Wal.open(dir, io, WalTestSupport.SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            StorageException e = assertThrows(StorageException.class,
                    () -> wal.append(1, ByteBuffer.allocate(40_000)));
            Path next = WalTestSupport.segmentFile(dir, 1);
            assertEquals(next, e.file());
            assertTrue(e.getMessage().contains("cannot create WAL segment 1"), e.getMessage());
            assertRefusesAppends(wal, next);
            assertEquals(1, WalTestSupport.readAll(wal, lsn).size(), "what was appended stays readable");
        }
    }

    @Test
    @Timeout(60)
    void theSwitchUsesTheSegmentPreparedAheadSoAFullDiskThenDoesNotStopIt() {
        try (Wal wal = Wal.open(dir, io, WalTestSupport.SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            long first = wal.append(1, ByteBuffer.allocate(40_000)); // past half: segment 1 is prepared in the background
            while (!wal.nextSegmentReady()) LockSupport.parkNanos(1_000_000);
            io.failWrite = true; // creating segment 1 now would fail: only the prepared file lets the switch succeed
            long second = wal.append(1, ByteBuffer.allocate(40_000));
            assertEquals(1, WalSegmentDescriptor.segmentIndex(second, WalTestSupport.SEGMENT_SIZE));
            assertEquals(2, WalTestSupport.readAll(wal, first).size());
        }
    }

    @Test
    void failedOpenOfTheNextSegmentFailsTheAppend() {
        try (Wal wal = Wal.open(dir, io, WalTestSupport.SEGMENT_SIZE, WalSyncMode.LOG_ONLY, null)) {
            wal.append(1, ByteBuffer.allocate(40_000));
            io.failOpenOf = WalSegmentDescriptor.fileName(1);
            StorageException e = assertThrows(StorageException.class,
                    () -> wal.append(1, ByteBuffer.allocate(40_000)));
            assertEquals(WalTestSupport.segmentFile(dir, 1), e.file());
            assertRefusesAppends(wal, WalTestSupport.segmentFile(dir, 1));
        }
    }

    @Test
    void failedBackgroundFlushStopsTheWal() throws InterruptedException {
        try (Wal wal = Wal.open(dir, io, WalTestSupport.SEGMENT_SIZE, WalSyncMode.BACKGROUND, Duration.ofMillis(2))) {
            io.failForce = true;
            wal.append(1, ByteBuffer.allocate(10));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (wal.failure() == null && System.nanoTime() < deadline) Thread.sleep(2);
            assertRefusesAppends(wal, WalTestSupport.segmentFile(dir, 0));
        }
    }
}
