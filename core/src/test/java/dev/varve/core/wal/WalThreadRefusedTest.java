package dev.varve.core.wal;

import static dev.varve.core.wal.WalTestSupport.SEGMENT_SIZE;
import static dev.varve.core.wal.WalTestSupport.readAll;
import static dev.varve.core.wal.WalTestSupport.segmentFile;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.util.RefusedThreads;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The OS refusing the WAL's short-lived threads ({@code OutOfMemoryError: unable to create native thread}, under a
 * process or cgroup thread limit): the segment that would have been prepared ahead is created at the switch, the
 * switch's second half runs on the appending thread, and no append fails, hangs or loses its record. Before, the
 * append past half a segment threw the error after it had reserved its place, so every later append waited forever
 * for that record, and close hung on a preparation that never ran; a refused closer thread left the old segment sealed
 * while appends went on after the seal.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a hung append is not interruptible
class WalThreadRefusedTest {
    @TempDir
    Path dir;

    /** The append; the refusal that escapes it fails the test (JUnit would abort the whole test JVM on the error). */
    private static long append(Wal wal, byte[] payload) {
        try {
            return wal.append(7, ByteBuffer.wrap(payload));
        } catch (OutOfMemoryError e) {
            throw new AssertionError("the append failed because a background thread could not be started: " + e);
        }
    }

    @ParameterizedTest
    @EnumSource(WalSyncMode.class)
    void appendsGoOnAcrossSegmentsWhenNoThreadCanBeStarted(WalSyncMode mode) {
        Random rnd = WalTestSupport.seeded("thread-refused");
        List<byte[]> payloads = new ArrayList<>();
        long first;
        try (Wal wal = Wal.open(dir, FileIOFactory.standard(), SEGMENT_SIZE, mode, Duration.ofMillis(50))) {
            wal.threadFactory(RefusedThreads.all());
            first = -1;
            for (int i = 0; i < 20; i++) { // 200 KB: three segment switches of 64 KiB segments
                byte[] p = WalTestSupport.randomBytes(rnd, 10_000);
                payloads.add(p);
                long lsn = append(wal, p);
                wal.commit(lsn);
                if (first < 0) first = lsn;
            }
            wal.force();
            assertTrue(Files.exists(segmentFile(dir, 3)), "the switches finished: the newest segment is named");
            assertFalse(Files.exists(dir.resolve(WalSegmentDescriptor.fileName(3) + WalSegmentDescriptor.TEMP_SUFFIX)));
        }
        try (Wal reopened = Wal.open(dir, FileIOFactory.standard(), SEGMENT_SIZE, mode, Duration.ofMillis(50))) {
            List<WalTestSupport.Rec> read = readAll(reopened, first);
            assertEquals(payloads.size(), read.size(), "every acknowledged record is read back after reopening");
            for (int i = 0; i < payloads.size(); i++) assertArrayEquals(payloads.get(i), read.get(i).payload());
        }
    }
}
