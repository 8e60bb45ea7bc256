package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code varve verify} and {@code varve info} refuse a page file put back from an earlier copy of the store, or copied in
 * from another store, naming it: every checksum of such a file is right, only its generation or store id tells.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class CliVerifyPageFileGenerationTest {
    @TempDir
    Path tmp;

    private static VarveConfig config(Path dir) {
        return VarveConfig.builder().path(dir).partitions(1).dataRegionSize(16L << 20).walSegmentSize(4L << 20)
                .checkpointBufferSize(4L << 20).captureBufferSize(4L << 20).checkpointFrequency(Duration.ofHours(1)).build();
    }

    private static void fill(Path dir, int from, int to) {
        try (Varve store = Varve.open(config(dir))) {
            Table t = store.table("t");
            for (int k = from; k < to; k++) t.put(("key-" + k).getBytes(StandardCharsets.UTF_8), ("value-" + k).getBytes(StandardCharsets.UTF_8));
        }
    }

    @Test
    void aRolledBackPageFileIsDamageNamingIt() throws Exception {
        Path dir = tmp.resolve("store");
        fill(dir, 0, 200);
        Path file = dir.resolve("pages/t00001-p00000.page");
        Path aside = tmp.resolve("aside.page");
        Files.copy(file, aside);
        fill(dir, 200, 400);
        assertEquals(Main.OK, CliRun.of("verify", dir.toString()).code());
        CliRun sound = CliRun.of("info", dir.toString());
        assertTrue(sound.out().matches("(?s).*storeId: [0-9a-f]{16}\\R.*"), sound.toString());
        Files.copy(aside, file, StandardCopyOption.REPLACE_EXISTING);
        CliRun r = CliRun.of("verify", "--json", dir.toString());
        assertEquals(Main.DAMAGE, r.code(), r.toString());
        assertTrue(r.damage().stream().anyMatch(d -> d.file().endsWith("t00001-p00000.page") && d.what().contains("earlier backup")), r.toString());
        CliRun info = CliRun.of("info", dir.toString());
        assertNotEquals(Main.OK, info.code(), info.toString());
        assertTrue(info.err().contains("t00001-p00000.page"), info.toString());
    }

    @Test
    void aPageFileOfAnotherStoreIsDamageNamingIt() throws Exception {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        fill(a, 0, 200);
        fill(b, 0, 200);
        Files.copy(b.resolve("pages/t00001-p00000.page"), a.resolve("pages/t00001-p00000.page"), StandardCopyOption.REPLACE_EXISTING);
        CliRun r = CliRun.of("verify", "--json", a.toString());
        assertEquals(Main.DAMAGE, r.code(), r.toString());
        assertTrue(r.damage().stream().anyMatch(d -> d.file().endsWith("t00001-p00000.page") && d.what().contains("another store")), r.toString());
    }
}
