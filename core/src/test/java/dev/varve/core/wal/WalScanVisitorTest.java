package dev.varve.core.wal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an open's scan shows its visitor: every record in LSN order, each payload exactly the bytes appended (read from
 * the view's position: the scan passes one view per segment, positioned on each record), little-endian and
 * read-only, across many segments and whatever the visitor did to the view before.
 */
@Timeout(60)
class WalScanVisitorTest {
    @TempDir
    Path dir;

    @Test
    void everyRecordIsShownWithExactlyItsPayload() {
        Random rnd = WalTestSupport.seeded("WalScanVisitorTest");
        List<Long> lsns = new ArrayList<>();
        List<Integer> types = new ArrayList<>();
        List<byte[]> payloads = new ArrayList<>();
        try (Wal wal = Wal.open(WalOpenScan.run(FileIOFactory.standard(), dir, WalTestSupport.SEGMENT_SIZE, WalSyncMode.LOG_ONLY, -1, false),
                Duration.ofSeconds(1))) {
            for (int i = 0; i < 2_000; i++) {
                byte[] p = WalTestSupport.randomBytes(rnd, i % 50 == 0 ? 9_000 + rnd.nextInt(20_000) : rnd.nextInt(400));
                int type = 1 + rnd.nextInt(200);
                lsns.add(wal.append(type, ByteBuffer.wrap(p)));
                types.add(type);
                payloads.add(p);
            }
            wal.commit(lsns.get(lsns.size() - 1));
        }
        List<Long> seenLsns = new ArrayList<>();
        List<Integer> seenTypes = new ArrayList<>();
        List<byte[]> seen = new ArrayList<>();
        WalOpenScan.run(FileIOFactory.standard(), dir, WalTestSupport.SEGMENT_SIZE, WalSyncMode.LOG_ONLY, -1, false, (lsn, type, payload) -> {
            assertTrue(payload.isReadOnly(), "read-only");
            assertEquals(ByteOrder.LITTLE_ENDIAN, payload.order());
            if (type == WalSegmentDescriptor.SEAL_TYPE) return;
            byte[] b = new byte[payload.remaining()];
            payload.get(b);
            seenLsns.add(lsn);
            seenTypes.add(type);
            seen.add(b);
            payload.order(ByteOrder.BIG_ENDIAN).limit(payload.capacity()).position(0); // undone for the next record
        });
        assertTrue(WalSegmentDescriptor.segmentIndex(lsns.get(lsns.size() - 1), WalTestSupport.SEGMENT_SIZE)
                - WalSegmentDescriptor.segmentIndex(lsns.get(0), WalTestSupport.SEGMENT_SIZE) >= 10, "the records span many segments");
        assertEquals(lsns, seenLsns);
        assertEquals(types, seenTypes);
        for (int i = 0; i < payloads.size(); i++) assertArrayEquals(payloads.get(i), seen.get(i), "payload of record " + i);
    }
}
