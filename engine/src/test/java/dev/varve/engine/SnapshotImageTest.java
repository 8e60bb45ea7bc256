package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.core.tree.BPlusTree;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A snapshot's page image loaded into a new store equals the snapshot key for key, however much the store changed
 * after it (pages read from page memory, from the page files and from the archive); the new store is an ordinary
 * store (it takes writes and snapshots of its own); damaged or misplaced pages are refused.
 */
class SnapshotImageTest {
    private static final String[] TABLES = {"hash", "placed"};

    @TempDir
    Path dir;

    private static VarveConfig config(Path path, RecoveryMode mode) {
        return VarveConfig.builder().path(path).dataRegionSize(16L << 20).partitions(4).recoveryMode(mode)
                .checkpointBufferSize(1L << 20).captureBufferSize(1L << 20).archiveSegmentSize(256L << 10)
                .retention(RankTreePolicy.levels(Retention.keepAll(), Retention.keepAll(), Retention.keepAll())).walSegmentSize(4L << 20).build();
    }

    /** One model per table: partition, key (string), value. */
    private static final class Model {
        final Map<String, Map<Integer, TreeMap<String, byte[]>>> tables = new HashMap<>();

        void put(String t, int p, String k, byte[] v) {
            tables.computeIfAbsent(t, x -> new HashMap<>()).computeIfAbsent(p, x -> new TreeMap<>()).put(k, v);
        }

        void remove(String t, int p, String k) {
            TreeMap<String, byte[]> m = tables.computeIfAbsent(t, x -> new HashMap<>()).computeIfAbsent(p, x -> new TreeMap<>());
            m.remove(k);
        }

        Model copy() {
            Model c = new Model();
            tables.forEach((t, parts) -> parts.forEach((p, m) -> m.forEach((k, v) -> c.put(t, p, k, v))));
            return c;
        }
    }

    private static void round(Varve s, Model model, SplittableRandom rnd, int n) {
        Table hash = s.table("hash");
        Table placed = s.table("placed", TableOptions.callerPlaced(3));
        for (int i = 0; i < n; i++) {
            String k = "key-" + rnd.nextInt(600);
            byte[] key = k.getBytes(StandardCharsets.UTF_8);
            if (rnd.nextInt(10) == 0) {
                hash.remove(key);
                for (int p = 0; p < 4; p++) model.remove("hash", p, k);
            } else {
                byte[] v = new byte[rnd.nextInt(10) == 0 ? 5000 + rnd.nextInt(9000) : 1 + rnd.nextInt(300)]; // some over a page
                rnd.nextBytes(v);
                hash.put(key, v);
                for (int p = 0; p < 4; p++) model.remove("hash", p, k);
                model.put("hash", 0, k, v); // hash placement: the table's scan finds it; partition 0 stands for "somewhere"
            }
            int p = rnd.nextInt(3);
            byte[] v = ("placed " + i + " " + "y".repeat(rnd.nextInt(200))).getBytes(StandardCharsets.UTF_8);
            placed.partition(p).put(key, v);
            model.put("placed", p, k, v);
        }
    }

    /**
     * Loads the image page by page (snapshot shipping sends runs; its own tests cover those), each page read into the
     * loader's own buffer, which it writes from as it is (a buffer of the caller's is copied: ImageLoaderOpenFilesTest).
     */
    private static Path load(SnapshotImage image, VarveConfig target) {
        try (ImageLoader loader = ImageLoader.create(target)) {
            long pages = 0;
            for (ByteBuffer page; image.next(page = loader.runBuffer(image.pageSize())); pages++)
                loader.write(image.fileId(), image.index(), page.flip());
            assertEquals(image.pageCount(), pages);
            assertEquals(image.tables(), loader.finish(), "the loaded catalog and entry counts are the image's");
        }
        return target.path();
    }

    private static void assertEqualsModel(Varve s, Model model) {
        assertEquals(List.of("hash", "placed"), s.tables());
        TreeMap<String, byte[]> hashExpected = new TreeMap<>();
        model.tables.getOrDefault("hash", Map.of()).values().forEach(hashExpected::putAll);
        assertScan(s.table("hash").scan(null, null), hashExpected, "hash");
        Table placed = s.table("placed", TableOptions.callerPlaced(3));
        for (int p = 0; p < 3; p++)
            assertScan(placed.partition(p).scan(null, null), model.tables.getOrDefault("placed", Map.of()).getOrDefault(p, new TreeMap<>()), "placed/" + p);
    }

    private static void assertScan(Cursor c, TreeMap<String, byte[]> expected, String what) {
        try (c) {
            List<String> keys = new ArrayList<>();
            while (c.next()) {
                String k = new String(c.key(), StandardCharsets.UTF_8);
                keys.add(k);
                assertTrue(expected.containsKey(k), what + " holds " + k + ", which the snapshot does not");
                assertArrayEquals(expected.get(k), c.value(), what + ": value of " + k);
            }
            assertEquals(expected.size(), keys.size(), what + ": entries");
        }
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(120)
    void imagesOfSeveralSnapshotsEqualTheirModels(RecoveryMode mode) {
        SplittableRandom rnd = new SplittableRandom(7);
        Model model = new Model();
        List<Long> ids = new ArrayList<>();
        List<Model> models = new ArrayList<>();
        try (Varve s = Varve.open(config(dir.resolve("source"), mode), UnforcedFileIOFactory.INSTANCE)) {
            for (int r = 0; r < 4; r++) {
                round(s, model, rnd, 1500);
                if (r == 1) s.checkpoint().join(); // some snapshots' pages on disk, some only in memory
                ids.add(s.snapshotNow(1 + r % 3));
                models.add(model.copy());
            }
            s.table("placed", TableOptions.callerPlaced(3)).partition(1).destroy(); // archived pages, erased range
            model.tables.get("placed").remove(1);
            round(s, model, rnd, 3000);
            s.checkpoint().join();
            round(s, model, rnd, 500); // dirty pages in memory while the images are read
            for (int i = 0; i < ids.size(); i++) {
                Path target;
                try (SnapshotImage image = SnapshotImage.open(s, ids.get(i))) {
                    assertEquals(ids.get(i), image.snapshot());
                    assertEquals(List.of("hash", "placed"), image.tables().stream().map(SnapshotImage.TableImage::name).toList());
                    target = load(image, config(dir.resolve("image-" + i), mode));
                }
                StoreVerifier.Report verified = StoreVerifier.verify(config(target, mode)); // free lists, page claims, counts
                assertTrue(verified.damage().isEmpty() && verified.unusable() == null && verified.structure() != null, verified.toString());
                try (Varve copy = Varve.open(config(target, mode), UnforcedFileIOFactory.INSTANCE)) {
                    assertEqualsModel(copy, models.get(i));
                    assertTrue(copy.snapshots().isEmpty(), "a loaded image holds no snapshots");
                }
            }
        }
    }

    @Test
    @Timeout(60)
    void aLoadedStoreTakesWritesAndSnapshotsOfItsOwn() {
        SplittableRandom rnd = new SplittableRandom(11);
        Model model = new Model();
        Path target;
        try (Varve s = Varve.open(config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) {
            round(s, model, rnd, 2000);
            long id = s.snapshotNow();
            round(s, new Model(), rnd, 2000);
            try (SnapshotImage image = SnapshotImage.open(s, id)) {
                target = load(image, config(dir.resolve("copy"), RecoveryMode.CHECKPOINT_RECOVERY_FILE));
            }
        }
        Model before = model.copy();
        try (Varve copy = Varve.open(config(target, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) {
            assertEquals(BPlusTree.MAX_VALUE_BYTES, copy.engine().writePath.largestValue(),
                    "no marker bounds the image's values (up to 14,000 bytes here): replay bounds the chains it frees by the longest there can be");
            long own = copy.snapshotNow();
            round(copy, model, rnd, 2000);
            copy.table("newer").put(new byte[]{1}, new byte[]{2});
            copy.checkpoint().join();
            try (SnapshotView v = copy.asOf(own)) {
                assertEquals(List.of("hash", "placed"), v.tables(), "the copy's own snapshot predates table newer");
                assertEquals(before.tables.get("hash").get(0).size(), countOf(v.table("hash").scan(null, null)));
            }
        }
        try (Varve copy = Varve.open(config(target, RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) {
            assertArrayEquals(new byte[]{2}, copy.table("newer").get(new byte[]{1}));
            assertEquals(model.tables.get("hash").get(0).size(), countOf(copy.table("hash").scan(null, null)));
        }
    }

    private static int countOf(Cursor c) {
        try (c) {
            int n = 0;
            while (c.next()) n++;
            return n;
        }
    }

    @Test
    @Timeout(60)
    void damagedMisplacedAndIncompleteImagesAreRefused() throws Exception {
        try (Varve s = Varve.open(config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE), UnforcedFileIOFactory.INSTANCE)) {
            round(s, new Model(), new SplittableRandom(3), 1000);
            long id = s.snapshotNow();
            try (SnapshotImage image = SnapshotImage.open(s, id);
                 ImageLoader loader = ImageLoader.create(config(dir.resolve("bad"), RecoveryMode.CHECKPOINT_RECOVERY_FILE))) {
                ByteBuffer page = ByteBuffer.allocateDirect(image.pageSize());
                assertTrue(image.next(page));
                assertEquals(0, image.fileId(), "the catalog's file comes first");
                int index = image.index();
                page.flip();
                page.put(100, (byte) (page.get(100) ^ 1));
                CorruptionException e = assertThrows(CorruptionException.class, () -> loader.write(0, index, page));
                assertTrue(e.getMessage().contains("checksum mismatch"), e.getMessage());
                page.put(100, (byte) (page.get(100) ^ 1));
                e = assertThrows(CorruptionException.class, () -> loader.write(0, index + 1, page));
                assertTrue(e.getMessage().contains("carries page id"), e.getMessage());
                loader.write(0, index, page);
                assertThrows(IllegalArgumentException.class, () -> loader.write(0, index, page), "a page goes in once");
                assertThrows(IllegalArgumentException.class, () -> loader.write(0, index, page.duplicate().limit(100)), "whole pages");
                e = assertThrows(CorruptionException.class, loader::finish);
                assertTrue(e.getMessage().contains("meta page"), e.getMessage());
                while (image.next(page.clear()) && (image.fileId() == 0)) loader.write(0, image.index(), page.flip());
                e = assertThrows(CorruptionException.class, loader::finish, "the tables' partitions are missing");
                assertTrue(e.getMessage().contains("not its catalog's"), e.getMessage());
            }
        }
        Files.createDirectories(dir.resolve("full"));
        Files.writeString(dir.resolve("full").resolve("x"), "x");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ImageLoader.create(config(dir.resolve("full"),
                RecoveryMode.CHECKPOINT_RECOVERY_FILE)));
        assertTrue(e.getMessage().contains("not empty"), e.getMessage());
        assertFalse(Arrays.asList(dir.resolve("full").toFile().list()).contains("pages"), "a refused load creates nothing");
    }
}
