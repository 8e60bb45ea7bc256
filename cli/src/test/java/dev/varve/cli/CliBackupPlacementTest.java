package dev.varve.cli;

import dev.varve.engine.Table;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * {@code varve backup DIR} keeps tables' placement and partition count, and every key in its partition; {@code --as-of}
 * copies the tables the snapshot holds.
 */
class CliBackupPlacementTest {
    @TempDir
    Path dir;

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    @Timeout(60)
    void callerPlacedTableKeepsEveryKeyInItsPartition() {
        Path source = dir.resolve("source");
        long id;
        try (Varve s = Varve.open(SmallStore.fresh(source).build())) {
            Table grid = s.table("grid", TableOptions.callerPlaced(3));
            grid.partition(0).put(utf8("shared"), utf8("in 0"));
            grid.partition(2).put(utf8("shared"), utf8("in 2"));
            grid.partition(1).put(utf8("only-1"), utf8("one"));
            s.table("plain", TableOptions.hashPlaced(5)).put(utf8("k"), utf8("v"));
            id = s.snapshotNow();
            grid.partition(1).put(utf8("after"), utf8("not in the snapshot"));
            s.table("later").put(utf8("k"), utf8("a table created after the snapshot")); // not in the copy, not a refusal
        }
        Path copy = dir.resolve("copy");
        CliRun r = CliRun.of("backup", source.toString(), "--as-of", Long.toString(id), "--to", copy.toString());
        assertEquals(Main.OK, r.code(), r.toString());
        try (Varve c = Varve.open(SmallStore.config(copy).build())) {
            Table grid = c.table("grid");
            assertEquals(TableOptions.callerPlaced(3), grid.options());
            assertArrayEquals(utf8("in 0"), grid.partition(0).get(utf8("shared")));
            assertArrayEquals(utf8("in 2"), grid.partition(2).get(utf8("shared")));
            assertArrayEquals(utf8("one"), grid.partition(1).get(utf8("only-1")));
            assertNull(grid.partition(1).get(utf8("shared")));
            assertNull(grid.partition(1).get(utf8("after")));
            assertEquals(TableOptions.hashPlaced(5), c.table("plain").options());
            assertArrayEquals(utf8("v"), c.table("plain").get(utf8("k")));
            assertEquals(Set.of("grid", "plain"), Set.copyOf(c.tables()));
        }
    }
}
