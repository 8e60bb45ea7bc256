package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.core.wal.WalSegmentDescriptor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

import static dev.varve.engine.PageFileGenerationTest.assertSame;
import static dev.varve.engine.PageFileGenerationTest.contents;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A WAL segment copied in from another store of the same shape — whole, every CRC right, its records those of the
 * other store — is refused at open (writable and read-only), naming the file and both stores' ids, before anything on
 * disk changes, and {@code verify} reports it; segments that name no store (written before the store's id was
 * durable, or by an earlier format) still open.
 */
@Timeout(120)
class WalForeignSegmentTest {
    @TempDir
    Path tmp;

    /** The smallest segments the configuration takes (4 MiB): about 1,400 of {@link #churn}'s puts fill one. */
    static VarveConfig config(Path dir) {
        return FixtureSupport.small(dir).partitions(1).build();
    }

    private static final int KEYS = 64;
    private static final int VALUE_BYTES = 3000;

    /** Puts {@code from} to {@code to} (exclusive) over {@link #KEYS} keys: the WAL grows, the pages do not. */
    static void churn(Varve store, int from, int to, int salt) {
        Table t = store.table("t");
        for (int i = from; i < to; i++) t.put(FixtureSupport.utf8("key-" + (i % KEYS)), FixtureSupport.bytes(salt + i, VALUE_BYTES));
    }

    /** Each key holds the last value {@link #churn} put up to {@code to}. */
    static void assertChurned(Varve store, int to, int salt) {
        Table t = store.table("t");
        for (int i = to - KEYS; i < to; i++)
            assertArrayEquals(FixtureSupport.bytes(salt + i, VALUE_BYTES), t.get(FixtureSupport.utf8("key-" + (i % KEYS))), "put " + i);
    }

    /** The store's id, from its latest start marker. */
    static long storeId(Path dir) {
        return new CheckpointMarkers(FileIOFactory.standard(), dir.resolve("checkpoints")).latestStart().orElseThrow().storeId();
    }

    /**
     * A store written, checkpointed (its id durable), written on across several segments, checkpointed again and
     * written on, then crashed: recovery replays the WAL from the last checkpoint's mark. {@code salt} tells the
     * values of two stores apart; their records have the same sizes, so the same positions and segment names.
     */
    private static void writeAndCrash(Path dir, int salt) throws Exception {
        Varve store = Varve.open(config(dir), UnforcedFileIOFactory.INSTANCE);
        churn(store, 0, 200, salt);
        store.checkpoint().get(30, TimeUnit.SECONDS);
        churn(store, 200, 5000, salt); // three segments and more
        store.checkpoint().get(30, TimeUnit.SECONDS);
        churn(store, 5000, 9000, salt); // and as many that only the WAL holds
        store.halt();
    }

    private static int tag(Path segment) throws IOException {
        ByteBuffer h = ByteBuffer.wrap(Files.readAllBytes(segment)).order(ByteOrder.LITTLE_ENDIAN);
        return h.getInt(WalSegmentDescriptor.STORE_TAG_OFFSET);
    }

    @Test
    void aSegmentOfAnotherStoreIsRefusedByOpenAndReportedByVerify() throws Exception {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        writeAndCrash(a, 0);
        writeAndCrash(b, 1_000_000); // the same shape: the same segment names and record positions, other values
        List<Path> segments = FixtureSupport.walSegments(a);
        assertTrue(segments.size() >= 3, "segments " + segments);
        Path target = segments.get(segments.size() - 2); // one recovery replays
        Path foreign = b.resolve("wal").resolve(target.getFileName());
        assertEquals(WalSegmentDescriptor.storeTag(storeId(b)), tag(foreign), "the segment records its store");
        Files.copy(target, tmp.resolve("a-own.seg"));
        Files.copy(foreign, target, StandardCopyOption.REPLACE_EXISTING);
        Map<Path, byte[]> before = contents(a);
        String idA = String.format("%016x", storeId(a));
        String tagB = String.format("%08x", WalSegmentDescriptor.storeTag(storeId(b)));

        CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(config(a), UnforcedFileIOFactory.INSTANCE).close());
        assertTrue(e.getMessage().contains(target.getFileName().toString()) && e.getMessage().contains("belongs to another store")
                && e.getMessage().contains(idA) && e.getMessage().contains(tagB), e.getMessage());
        assertSame(before, contents(a));
        CorruptionException ro = assertThrows(CorruptionException.class, () -> Varve.openReadOnly(config(a)).close());
        assertTrue(ro.getMessage().contains("belongs to another store"), ro.getMessage());
        // not damage: the option that cuts a damaged WAL does not make it this store's
        assertThrows(CorruptionException.class, () -> Varve.open(config(a), OpenOption.TRUNCATE_DAMAGED_WAL).close());
        assertTrue(StoreVerifier.verify(config(a)).damage().stream()
                .anyMatch(d -> d.file().equals(target) && d.what().contains("belongs to another store") && d.what().contains(idA)),
                () -> StoreVerifier.verify(config(a)).damage().toString());
        assertSame(before, contents(a));
        // its own segment back, the store recovers what it wrote
        Files.copy(tmp.resolve("a-own.seg"), target, StandardCopyOption.REPLACE_EXISTING);
        try (Varve store = Varve.open(config(a), UnforcedFileIOFactory.INSTANCE)) {
            assertChurned(store, 9000, 0);
        }
    }

    /**
     * {@code varve wal-dump} and {@code varve info} read the WAL through {@link WalInspector}, which judges it as open
     * does: a segment of another store is refused there too, naming it, instead of its records shown as this store's.
     */
    @Test
    void theWalInspectorRefusesASegmentOfAnotherStoreAsOpenDoes() throws Exception {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        writeAndCrash(a, 0);
        writeAndCrash(b, 1_000_000);
        List<Path> segments = FixtureSupport.walSegments(a);
        Path target = segments.get(segments.size() - 2);
        Files.copy(b.resolve("wal").resolve(target.getFileName()), target, StandardCopyOption.REPLACE_EXISTING);
        Map<Path, byte[]> before = contents(a);

        CorruptionException range = assertThrows(CorruptionException.class, () -> WalInspector.range(config(a)));
        assertTrue(range.getMessage().contains(target.getFileName().toString()) && range.getMessage().contains("belongs to another store"),
                range.getMessage());
        CorruptionException read = assertThrows(CorruptionException.class, () -> WalInspector.read(config(a), 0, r -> true, d -> { }));
        assertTrue(read.getMessage().contains("belongs to another store"), read.getMessage());
        assertSame(before, contents(a));
    }

    /** The WAL keeps segments recovery no longer reads, for its readers: one of another store there is refused too. */
    @Test
    void aSegmentOfAnotherStoreBeforeWhereRecoveryStartsIsRefusedToo() throws Exception {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        writeAndCrash(a, 0);
        writeAndCrash(b, 1_000_000);
        List<Path> segments = FixtureSupport.walSegments(a);
        Path target = segments.stream().filter(p -> {
            try {
                return tag(p) != 0;
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }).findFirst().orElseThrow(); // the oldest segment that records the store
        Files.copy(b.resolve("wal").resolve(target.getFileName()), target, StandardCopyOption.REPLACE_EXISTING);
        Map<Path, byte[]> before = contents(a);
        CorruptionException e = assertThrows(CorruptionException.class, () -> Varve.open(config(a), UnforcedFileIOFactory.INSTANCE).close());
        assertTrue(e.getMessage().contains(target.getFileName().toString()) && e.getMessage().contains("belongs to another store"), e.getMessage());
        assertSame(before, contents(a));
    }

    /** Segments of the format before the store tag (version 2: reserved bytes, outside the CRC) open as they did. */
    @Test
    void segmentsThatNameNoStoreStillOpen() throws Exception {
        Path a = tmp.resolve("a");
        writeAndCrash(a, 0);
        for (Path segment : FixtureSupport.walSegments(a)) rewriteAsVersion2(segment);
        try (Varve store = Varve.open(config(a), UnforcedFileIOFactory.INSTANCE)) {
            assertChurned(store, 9000, 0);
            churn(store, 9000, 10_000, 0);
        }
        try (Varve store = Varve.open(config(a), UnforcedFileIOFactory.INSTANCE)) {
            assertChurned(store, 10_000, 0);
        }
    }

    /**
     * The first segment of a new store is created before its first open's checkpoint makes the store's id durable, so
     * it names no store; every later one names it.
     */
    @Test
    void everySegmentCreatedOnceTheIdIsDurableRecordsIt() throws Exception {
        Path a = tmp.resolve("a");
        try (Varve store = Varve.open(config(a), UnforcedFileIOFactory.INSTANCE)) {
            churn(store, 0, 4000, 0); // into the second segment and on
            long id = storeId(a);
            List<Path> segments = FixtureSupport.walSegments(a);
            assertTrue(segments.size() >= 2, "segments " + segments);
            for (Path s : segments) {
                boolean first = s.getFileName().toString().equals(WalSegmentDescriptor.fileName(0));
                assertEquals(first ? 0 : WalSegmentDescriptor.storeTag(id), tag(s),
                        s.getFileName() + (first ? ": created before the first checkpoint made the id durable" : " records the store"));
            }
        }
    }

    /** The version 2 header of this segment: no store tag, its CRC over [0, 32) only. */
    static void rewriteAsVersion2(Path segment) throws IOException {
        try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer h = ByteBuffer.allocate(WalSegmentDescriptor.HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
            ch.read(h, 0);
            h.putInt(WalSegmentDescriptor.VERSION_OFFSET, 2).putInt(WalSegmentDescriptor.STORE_TAG_OFFSET, 0);
            CRC32C crc = new CRC32C();
            crc.update(h.array(), 0, WalSegmentDescriptor.HEADER_CRC_OFFSET);
            h.putInt(WalSegmentDescriptor.HEADER_CRC_OFFSET, (int) crc.getValue());
            ch.write(h.clear(), 0);
        }
    }
}
