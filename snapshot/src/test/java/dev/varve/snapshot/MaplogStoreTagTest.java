package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.store.StoreTag;
import dev.varve.snapshot.MaplogDescriptor.Kind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Maplog-format log parts (version 2) record the store's tag once its id is durable: a part created before records 0
 * (a new store crashed before its first marker reopens under a new id), one created or rewritten after records the
 * id, and a part of another store is refused at open, naming it and both ids, before anything changes.
 */
class MaplogStoreTagTest {
    private static final FileIOFactory IO = FileIOFactory.standard();
    private static final int NODE = 16;
    private static final long ID = 0x1234_5678_9abc_def0L;
    private static final long OTHER = 0x1111_2222_3333_4444L;

    @TempDir
    Path dir;

    private static MaplogFile open(Path path, long partEntries, MaplogFile.Missing missing, long storeId) {
        return new MaplogFile(IO, path, Kind.DROPS, MaplogDescriptor.NO_LEVEL, NODE, partEntries, missing, new AtomicLong(storeId));
    }

    private static int tag(Path file) throws IOException {
        return ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN).getInt(MaplogDescriptor.STORE_TAG_OFFSET);
    }

    private static void fill(MaplogFile log, int from, int n) {
        for (int i = from; i < from + n; i++) log.append(i, 10L * i, 100L * i);
        log.force();
    }

    @Test
    void aLogCreatedBeforeTheIdIsDurableNamesNoStoreAndItsRewriteRecordsIt() throws IOException {
        Path path = dir.resolve("drops.log");
        AtomicLong id = new AtomicLong();
        try (MaplogFile log = new MaplogFile(IO, path, Kind.DROPS, MaplogDescriptor.NO_LEVEL, NODE, MaplogFile.ONE_PART, MaplogFile.Missing.CREATE, id)) {
            fill(log, 0, 5);
            assertEquals(0, tag(path), "created before the id was durable");
            id.set(ID);
            log.compactBefore(2);
        }
        Path rewritten = MaplogParts.partPath(path, 2);
        assertEquals(StoreTag.of(ID), tag(rewritten), "rewritten after the id was durable");
        try (MaplogFile log = open(path, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT, ID)) {
            assertEquals(5, log.count());
        }
        byte[] before = Files.readAllBytes(rewritten);
        CorruptionException e = assertThrows(CorruptionException.class, () -> open(path, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT, OTHER).close());
        assertTrue(e.getMessage().contains(rewritten.getFileName().toString()) && e.getMessage().contains("belongs to another store")
                && e.getMessage().contains(String.format("%016x", OTHER)) && e.getMessage().contains(String.format("%08x", StoreTag.of(ID))), e.getMessage());
        assertArrayEquals(before, Files.readAllBytes(rewritten), "the refused open changed nothing");
    }

    @Test
    void partsCreatedOnceTheIdIsDurableRecordItAndAreCheckedEachAtOpen() throws IOException {
        Path path = dir.resolve("maplog.log");
        AtomicLong id = new AtomicLong();
        try (MaplogFile log = new MaplogFile(IO, path, Kind.DROPS, MaplogDescriptor.NO_LEVEL, NODE, NODE, MaplogFile.Missing.CREATE, id)) {
            fill(log, 0, 5);
            id.set(ID);
            fill(log, 5, 2 * NODE);
        }
        assertEquals(0, tag(path));
        for (Path p : List.of(MaplogParts.partPath(path, NODE), MaplogParts.partPath(path, 2 * NODE))) assertEquals(StoreTag.of(ID), tag(p), p.toString());
        try (MaplogFile log = open(path, NODE, MaplogFile.Missing.CORRUPT, ID)) {
            assertEquals(5 + 2 * NODE, log.count());
        }
        // the first part names no store, so the first one checked is the next: another store's open is refused there
        CorruptionException e = assertThrows(CorruptionException.class, () -> open(path, NODE, MaplogFile.Missing.CORRUPT, OTHER).close());
        assertTrue(e.getMessage().contains(MaplogParts.partPath(path, NODE).getFileName().toString()), e.getMessage());
    }

    @Test
    void aVersion1PartNamesNoStoreAndOpensForAnyStore() throws IOException {
        Path path = dir.resolve("drops.log");
        try (MaplogFile log = open(path, MaplogFile.ONE_PART, MaplogFile.Missing.CREATE, ID)) {
            fill(log, 0, 3);
        }
        ByteBuffer h = ByteBuffer.wrap(Files.readAllBytes(path)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(MaplogDescriptor.VERSION, h.getInt(MaplogDescriptor.VERSION_OFFSET));
        h.putInt(MaplogDescriptor.VERSION_OFFSET, 1).putInt(MaplogDescriptor.STORE_TAG_OFFSET, 0);
        h.putInt(MaplogDescriptor.HEADER_CRC_OFFSET, MaplogDescriptor.headerCrc(h));
        Files.write(path, h.array());
        try (MaplogFile log = open(path, MaplogFile.ONE_PART, MaplogFile.Missing.CORRUPT, OTHER)) {
            assertEquals(3, log.count());
        }
    }
}
