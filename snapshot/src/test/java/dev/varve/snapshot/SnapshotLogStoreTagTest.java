package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.store.StoreTag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The snapshot log (version 4) records the store's tag in its base block once the id is durable: a log created before
 * records 0, one a compaction rewrote after records the id, and another store's log is refused at open and reported
 * by the archive check, naming it and both ids, before anything changes; a version 3 log names no store and opens.
 */
class SnapshotLogStoreTagTest {
    private static final FileIOFactory IO = FileIOFactory.standard();
    private static final long ID = 0x1234_5678_9abc_def0L;
    private static final long OTHER = 0x1111_2222_3333_4444L;
    private static final int TAG_AT = SnapshotLogDescriptor.HEADER_SIZE + SnapshotLogDescriptor.STORE_TAG_OFFSET;

    @TempDir
    Path dir;

    private static int tag(Path file) throws IOException {
        return ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN).getInt(TAG_AT);
    }

    /** Ten snapshots in a log created before the id was durable, compacted below snapshot 6 after it was. */
    private Path compactedLog() throws IOException {
        Path path = dir.resolve(SnapshotLogDescriptor.FILE);
        AtomicLong id = new AtomicLong();
        try (SnapshotLog log = new SnapshotLog(IO, path, MaplogFile.Missing.CREATE, id)) {
            for (int i = 1; i <= 10; i++) log.append(new SnapshotRecord(i, 1, 1000L * i, 10L * i, 100L * i));
            log.force();
            assertEquals(0, tag(path), "created before the id was durable");
            id.set(ID);
            log.compact(6, 6000, new long[0]);
        }
        assertEquals(StoreTag.of(ID), tag(path), "rewritten after the id was durable");
        return path;
    }

    @Test
    void aLogCompactedOnceTheIdIsDurableRecordsItAndAnotherStoreRefusesIt() throws IOException {
        Path path = compactedLog();
        try (SnapshotLog log = new SnapshotLog(IO, path, MaplogFile.Missing.CORRUPT, new AtomicLong(ID))) {
            assertEquals(10, log.records());
        }
        byte[] before = Files.readAllBytes(path);
        CorruptionException e = assertThrows(CorruptionException.class,
                () -> new SnapshotLog(IO, path, MaplogFile.Missing.CORRUPT, new AtomicLong(OTHER)).close());
        assertTrue(e.getMessage().contains(path.getFileName().toString()) && e.getMessage().contains("snapshot log belongs to another store")
                && e.getMessage().contains(String.format("%016x", OTHER)) && e.getMessage().contains(String.format("%08x", StoreTag.of(ID))), e.getMessage());
        assertArrayEquals(before, Files.readAllBytes(path), "the refused open changed nothing");

        List<String> damage = new ArrayList<>();
        assertEquals(List.of(SnapshotLogDescriptor.FILE + "@" + TAG_AT), check(OTHER, true));
        assertEquals(List.of(), check(ID, false));
    }

    /** What the archive check of {@code dir} for store {@code storeId} reports: where, and (when {@code why}) a foreign file's. */
    private List<String> check(long storeId, boolean why) throws IOException {
        List<String> damage = new ArrayList<>();
        ArchiveFileCheck.check(IO, dir, 4096, ArchiveFileCheck.KEEP_ALL, storeId, (file, offset, what) -> {
            if (!why || what.contains("belongs to another store")) damage.add(file.getFileName() + "@" + offset);
        }, (file, from, bytes) -> {
        });
        return damage;
    }

    @Test
    void aVersion3LogNamesNoStoreAndOpensForAnyStore() throws IOException {
        Path path = compactedLog();
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(path)).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(SnapshotLogDescriptor.VERSION_OFFSET, 3).putInt(SnapshotLogDescriptor.HEADER_CRC_OFFSET, SnapshotLogDescriptor.headerCrc(b));
        int base = SnapshotLogDescriptor.HEADER_SIZE;
        b.putInt(TAG_AT, 0);
        b.putInt(base + SnapshotLogDescriptor.BASE_CRC_OFFSET, FormatChecks.crc32c(b, base, base + SnapshotLogDescriptor.BASE_CRC_OFFSET));
        Files.write(path, b.array());
        try (SnapshotLog log = new SnapshotLog(IO, path, MaplogFile.Missing.CORRUPT, new AtomicLong(OTHER))) {
            assertEquals(10, log.records());
        }
    }
}
