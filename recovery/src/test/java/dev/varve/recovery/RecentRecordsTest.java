package dev.varve.recovery;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.wal.Wal;
import dev.varve.core.wal.WalReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The records physical replay's LOGGED ops copy from: recent ones kept, older ones read again, missing ones refused. */
@Timeout(60)
class RecentRecordsTest {
    @TempDir
    Path dir;

    @Test
    void recentRecordsAreKeptAndOlderOnesAreReadFromTheWal() throws Exception {
        try (Wal wal = Wal.open(dir.resolve("wal"), FileIOFactory.standard(), 8L << 20, WalSyncMode.LOG_ONLY, Duration.ofSeconds(1))) {
            List<Long> lsns = new ArrayList<>();
            for (int i = 0; i < 200; i++) lsns.add(wal.append(RecordTypes.DATA_BATCH, payload(i)));
            RecentRecords records = new RecentRecords(wal);
            try (WalReader r = wal.read(lsns.get(0))) {
                while (r.next()) records.offer(r);
            }
            for (int i : new int[] {0, 1, 100, 135, 136, 199}) // 136 and on are in the ring, the rest read again
                assertEquals(payload(i), records.payload(lsns.get(i)), "record " + i);
            long notARecord = lsns.get(5) + 8;
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> records.payload(notARecord));
            assertTrue(e.getMessage().contains(Long.toString(notARecord)), e.getMessage());
            assertThrows(IllegalStateException.class, () -> records.payload(wal.position() + 4096));
        }
    }

    /** A payload of {@code 20 + i} bytes, each {@code i}. */
    private static ByteBuffer payload(int i) {
        byte[] b = new byte[20 + i];
        Arrays.fill(b, (byte) i);
        return ByteBuffer.wrap(b);
    }
}
