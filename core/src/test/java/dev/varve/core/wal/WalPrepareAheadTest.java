package dev.varve.core.wal;

import static dev.varve.core.wal.WalTestSupport.SEGMENT_SIZE;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The next segment is prepared once a quarter of the current one is written: begun at half, a writer at some 170 MB/s
 * of WAL on two busy cores caught up with the preparation and waited for it, 40-100 ms at a time.
 */
@Timeout(10)
class WalPrepareAheadTest {
    @TempDir
    Path dir;

    @Test
    void theNextSegmentIsPreparedOnceAQuarterOfTheCurrentOneIsWritten() {
        try (Wal wal = Wal.open(WalOpenScan.run(FileIOFactory.standard(), dir, SEGMENT_SIZE, WalSyncMode.LOG_ONLY, -1, false, null, 0),
                Duration.ofSeconds(1))) {
            int record = (int) (SEGMENT_SIZE / 3); // past a quarter, short of half
            wal.append(1, ByteBuffer.allocate(record));
            while (!wal.nextSegmentReady()) { // a preparation never begun runs into the test's timeout, whose interrupt ends the wait
                assertFalse(Thread.interrupted(), "segment 1 not prepared with a third of segment 0 written");
                LockSupport.parkNanos(1_000_000);
            }
        }
    }
}
