package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Cursor;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code load}, {@code backup DIR} and {@code salvage} write every entry into a {@code --new-config} target whose
 * data region is the least the configuration takes (2,048 pages), at each page size: the tool's batches must fit the
 * half of that region one change may touch, with small values (many operations per batch) and values of up to the
 * 1 MiB limit (many overflow pages per batch) alike.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class CliSmallRegionTargetTest {
    private static final int SMALL = 600;
    private static final int MEDIUM = 60;
    private static final int LARGE = 3;

    @TempDir
    static Path tmp;
    static Path source;
    static Path dump;
    static Map<String, byte[]> expected;

    @BeforeAll
    static void source() {
        source = tmp.resolve("source");
        expected = new TreeMap<>();
        // 300 bytes each: 64 of them already come to more than a 16 KiB page, so any batch of 64 small entries counts
        // one overflow page on top of its 64 split paths, at every page size
        for (int i = 0; i < SMALL; i++) expected.put(String.format("small-%05d", i), bytes(i, 300));
        for (int i = 0; i < MEDIUM; i++) expected.put(String.format("medium-%03d", i), bytes(SMALL + i, 20 << 10));
        for (int i = 0; i < LARGE; i++) expected.put("large-" + i, bytes(SMALL + MEDIUM + i, Varve.MAX_VALUE_BYTES));
        try (Varve s = Varve.open(SmallStore.fresh(source).build())) {
            Table t = s.table("t");
            expected.forEach((k, v) -> t.put(k.getBytes(StandardCharsets.UTF_8), v));
        }
        dump = tmp.resolve("source.dump");
        CliRun d = CliRun.of("dump", source.toString(), "--out", dump.toString());
        assertEquals(Main.OK, d.code(), d.toString());
    }

    /** {@code length} bytes that differ from key to key, so a value landing under the wrong key is seen. */
    private static byte[] bytes(long seed, int length) {
        byte[] b = new byte[length];
        new Random(seed).nextBytes(b);
        return b;
    }

    // 16 KiB pages take no 16 MiB region (1,024 pages): 32 MiB is their least
    @ParameterizedTest
    @CsvSource({"load, 4k, 8m", "load, 8k, 16m", "load, 16k, 32m", "backup, 4k, 8m", "backup, 8k, 16m", "backup, 16k, 32m",
        "salvage, 4k, 8m", "salvage, 8k, 16m", "salvage, 16k, 32m"})
    void writesEveryEntryIntoTheLeastRegion(String command, String pageSize, String region) throws IOException {
        Path settings = settings(command + "-" + pageSize, pageSize, region);
        Path target = tmp.resolve(command + "-" + pageSize);
        Path from = command.equals("load") ? dump : source; // load reads the dump of the store backup and salvage copy
        CliRun r = CliRun.of(command, from.toString(), "--to", target.toString(), "--new-config", settings.toString());
        assertEquals(Main.OK, r.code(), r.toString());
        assertHoldsEveryEntry(target, settings);
    }

    private static Path settings(String name, String pageSize, String region) throws IOException {
        return Files.writeString(tmp.resolve(name + ".properties"), "varve.pageSize=" + pageSize + "\nvarve.dataRegionSize=" + region
                + "\nvarve.checkpointBufferSize=1m\nvarve.captureBufferSize=1m\nvarve.walSegmentSize=4m\n");
    }

    private static void assertHoldsEveryEntry(Path target, Path settings) {
        Map<String, byte[]> actual = new TreeMap<>();
        try (Varve t = Varve.open(VarveConfig.load(settings, target)); Cursor c = t.table("t").scan(null, null)) {
            while (c.next()) actual.put(new String(c.key(), StandardCharsets.UTF_8), c.value());
        }
        assertEquals(expected.keySet(), actual.keySet());
        expected.forEach((k, v) -> assertArrayEquals(v, actual.get(k), k));
    }
}
