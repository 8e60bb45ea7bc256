package dev.varve.core.wal;

import static dev.varve.core.wal.WalTestSupport.SEGMENT_SIZE;
import static dev.varve.core.wal.WalTestSupport.segmentFile;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DamageSink;
import dev.varve.core.io.FileIOFactory;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Segments record the store whose durable id the WAL was given (0 until there is one), including one prepared ahead
 * before the id became durable; the scan and the offline check refuse one that names another store and accept those
 * that name none.
 */
@Timeout(60)
class WalStoreTagTest {
    private static final long ID = 0x1234_5678_9abc_def0L;
    private static final long OTHER = 0x0bad_cafe_0000_0001L;

    @TempDir
    Path dir;

    private Wal open(WalSyncMode mode, long storeId) {
        return Wal.open(WalOpenScan.run(FileIOFactory.standard(), dir, SEGMENT_SIZE, mode, -1, false, null, storeId), Duration.ofSeconds(1));
    }

    private int tag(long index) throws IOException {
        return ByteBuffer.wrap(Files.readAllBytes(segmentFile(dir, index))).order(ByteOrder.LITTLE_ENDIAN)
                .getInt(WalSegmentDescriptor.STORE_TAG_OFFSET);
    }

    @ParameterizedTest
    @EnumSource(WalSyncMode.class)
    void aSegmentPreparedBeforeTheIdWasDurableRecordsItWhenTaken(WalSyncMode mode) throws IOException {
        try (Wal wal = open(mode, 0)) {
            wal.append(1, ByteBuffer.allocate(40_000)); // past half: segment 1 is prepared, for no store yet
            while (!wal.nextSegmentReady()) LockSupport.parkNanos(1_000_000);
            wal.storeIdDurable(ID);
            wal.append(1, ByteBuffer.allocate(40_000)); // takes it
            wal.append(1, ByteBuffer.allocate(40_000)); // and creates segment 2 at the switch, or ahead
            wal.force();
        }
        assertEquals(0, tag(0), "created before the id was durable");
        assertEquals(WalSegmentDescriptor.storeTag(ID), tag(1));
        assertEquals(WalSegmentDescriptor.storeTag(ID), tag(2));
        open(mode, ID).close(); // its own store's
        CorruptionException e = assertThrows(CorruptionException.class, () -> open(mode, OTHER));
        assertEquals(segmentFile(dir, 1), e.file());
        assertTrue(e.getMessage().contains(String.format("%016x", OTHER)) && e.getMessage().contains("another store"), e.getMessage());
        List<String> damage = new ArrayList<>();
        DamageSink sink = (file, offset, what) -> damage.add(file.getFileName() + "@" + offset + ": " + what);
        WalFileCheck.check(FileIOFactory.standard(), dir, SEGMENT_SIZE, mode, OTHER, sink);
        assertEquals(2, damage.size(), damage.toString());
        assertTrue(damage.get(0).startsWith(WalSegmentDescriptor.fileName(1) + "@" + WalSegmentDescriptor.STORE_TAG_OFFSET + ": WAL segment belongs to another store"), damage.toString());
        damage.clear();
        WalFileCheck.check(FileIOFactory.standard(), dir, SEGMENT_SIZE, mode, ID, sink);
        assertEquals(List.of(), damage);
    }

    /**
     * The tag sits where version 2 kept the segment size's upper half (always 0), under the same CRC of [0, 32), and
     * the reserved bytes stay 0: a version 2 build finds a version 3 header whole and refuses it by its version (as
     * written by a newer release), not as a damaged header.
     */
    @Test
    void aVersion3HeaderIsWholeByTheVersion2Rule() throws IOException {
        open(WalSyncMode.LOG_ONLY, ID).close();
        ByteBuffer h = ByteBuffer.wrap(Files.readAllBytes(segmentFile(dir, 0))).order(ByteOrder.LITTLE_ENDIAN);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(h.array(), 0, WalSegmentDescriptor.HEADER_CRC_OFFSET);
        assertEquals((int) crc.getValue(), h.getInt(WalSegmentDescriptor.HEADER_CRC_OFFSET));
        assertEquals(0, h.getInt(WalSegmentDescriptor.HEADER_CRC_OFFSET + 4));
        assertEquals(3, h.getInt(WalSegmentDescriptor.VERSION_OFFSET));
        assertEquals(SEGMENT_SIZE, h.getInt(WalSegmentDescriptor.SEGMENT_SIZE_OFFSET));
        assertEquals(WalSegmentDescriptor.storeTag(ID), h.getInt(WalSegmentDescriptor.STORE_TAG_OFFSET));
    }

    /** The segment a new WAL starts with, and one a writable open under another mode starts, record the id given. */
    @Test
    void theSegmentsAnOpenCreatesRecordTheIdItWasGiven() throws IOException {
        open(WalSyncMode.LOG_ONLY, ID).close();
        assertEquals(WalSegmentDescriptor.storeTag(ID), tag(0));
        try (Wal wal = open(WalSyncMode.FSYNC, ID)) { // another mode: the newest segment is sealed, the next one made
            wal.commit(wal.append(1, ByteBuffer.allocate(100)));
        }
        assertEquals(WalSegmentDescriptor.storeTag(ID), tag(1));
    }
}
