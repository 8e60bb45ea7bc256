package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.engine.Cursor;
import dev.varve.engine.Table;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;

import java.nio.charset.StandardCharsets;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Copies keep each table's layout: {@code load} gives every table the partition count its dump records, {@code
 * salvage} keeps hash- or caller-placement and puts each entry of a caller-placed table back into its partition,
 * {@code dump} and {@code load} do the same (a caller-placed table's entries are dumped with their partitions), and
 * a load that fails leaves no half-made store.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class CliLayoutTest {
    @TempDir
    Path tmp;

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** h4: hash-placed in 4 partitions; h16: the default; cp3: caller-placed in 3, key "k" in partitions 0 and 2, "z" in 1. */
    private Path store() {
        Path dir = tmp.resolve("src");
        try (Varve s = Varve.open(SmallStore.config(dir).build())) {
            for (int i = 0; i < 200; i++) {
                s.table("h4", TableOptions.hashPlaced(4)).put(utf8("a" + i), utf8("v" + i));
                s.table("h16").put(utf8("b" + i), utf8("w" + i));
            }
            s.table("cp3", TableOptions.callerPlaced(3)).partition(0).put(utf8("k"), utf8("zero"));
            s.table("cp3", TableOptions.callerPlaced(3)).partition(2).put(utf8("k"), utf8("two"));
            s.table("cp3", TableOptions.callerPlaced(3)).partition(1).put(utf8("z"), utf8("one"));
        }
        return dir;
    }

    private static TreeMap<String, String> contents(Varve s, String table) {
        TreeMap<String, String> m = new TreeMap<>();
        try (Cursor c = s.table(table).scan(null, null)) {
            while (c.next()) m.put(new String(c.key(), StandardCharsets.UTF_8), new String(c.value(), StandardCharsets.UTF_8));
        }
        return m;
    }

    @Test
    void loadKeepsEachTablesPlacementPartitionsAndEveryPartitionsCopyOfAKey() throws Exception {
        Path src = store();
        Path dump = tmp.resolve("all.dump");
        CliRun d = CliRun.of("dump", src.toString(), "--out", dump.toString());
        assertEquals(Main.OK, d.code(), d.toString());
        Path loaded = tmp.resolve("loaded");
        CliRun l = CliRun.of("load", dump.toString(), "--to", loaded.toString());
        assertEquals(Main.OK, l.code(), l.toString());
        try (Varve s = Varve.open(SmallStore.config(src).build()); Varve t = Varve.open(SmallStore.config(loaded).build())) {
            assertEquals(TableOptions.hashPlaced(4), t.table("h4").options());
            assertEquals(TableOptions.hashPlaced(16), t.table("h16").options());
            for (String table : List.of("h4", "h16")) {
                assertEquals(contents(s, table), contents(t, table), table);
                for (int p = 0; p < s.table(table).partitions(); p++)
                    assertEquals(s.table(table).partition(p).size(), t.table(table).partition(p).size(), table + " partition " + p);
            }
            Table cp3 = t.table("cp3");
            assertEquals(TableOptions.callerPlaced(3), cp3.options());
            assertArrayEquals(utf8("zero"), cp3.partition(0).get(utf8("k")));
            assertNull(cp3.partition(1).get(utf8("k")));
            assertArrayEquals(utf8("one"), cp3.partition(1).get(utf8("z")));
            assertArrayEquals(utf8("two"), cp3.partition(2).get(utf8("k")));
            assertEquals(List.of(1L, 1L, 1L), List.of(cp3.partition(0).size(), cp3.partition(1).size(), cp3.partition(2).size()));
        }

        // a range of a caller-placed table is taken from every partition
        Path ranged = tmp.resolve("ranged.dump");
        assertEquals(Main.OK, CliRun.of("dump", src.toString(), "--table", "cp3", "--from", "k", "--to", "l", "--out", ranged.toString()).code());
        Path rangedLoad = tmp.resolve("ranged");
        assertEquals(Main.OK, CliRun.of("load", ranged.toString(), "--to", rangedLoad.toString()).code());
        try (Varve t = Varve.open(SmallStore.config(rangedLoad).build())) {
            Table cp3 = t.table("cp3");
            assertEquals(List.of("cp3"), t.tables());
            assertArrayEquals(utf8("zero"), cp3.partition(0).get(utf8("k")));
            assertEquals(0, cp3.partition(1).size(), "z is outside [k, l)");
            assertArrayEquals(utf8("two"), cp3.partition(2).get(utf8("k")));
        }
    }

    @Test
    void salvageKeepsPlacementAndEveryPartitionsCopyOfAKey() {
        Path src = store();
        Path to = tmp.resolve("salvaged");
        CliRun r = CliRun.of("salvage", src.toString(), "--to", to.toString());
        assertEquals(Main.OK, r.code(), r.toString());
        try (Varve t = Varve.open(SmallStore.config(to).build())) {
            assertEquals(TableOptions.hashPlaced(4), t.table("h4").options());
            assertEquals(TableOptions.callerPlaced(3), t.table("cp3").options());
            assertArrayEquals(utf8("zero"), t.table("cp3").partition(0).get(utf8("k")));
            assertNull(t.table("cp3").partition(1).get(utf8("k")));
            assertArrayEquals(utf8("two"), t.table("cp3").partition(2).get(utf8("k")));
            assertEquals(200, contents(t, "h4").size());
        }
    }

    @Test
    void aLoadThatFailsLeavesNoStoreAndNamesTheFix() throws IOException {
        Path big = tmp.resolve("big");
        try (Varve s = Varve.open(SmallStore.config(big).pageSize(16384).dataRegionSize(32L << 20).build())) { // the least: 2,048 pages
            s.table("t").put(new byte[4000], utf8("v")); // fits a 16 KiB page's key limit, not a 4 KiB one's
        }
        Path dump = tmp.resolve("big.dump");
        assertEquals(Main.OK, CliRun.of("dump", big.toString(), "--out", dump.toString()).code());
        Path target = tmp.resolve("small");
        CliRun l = CliRun.of("load", dump.toString(), "--to", target.toString());
        assertEquals(Main.USAGE, l.code(), l.toString());
        assertTrue(l.err().contains("4000 bytes") && l.err().contains("--page-size"), l.toString());
        assertFalse(Files.exists(target), "a failed load left its target behind");
        Path props = Files.writeString(tmp.resolve("load.properties"), "varve.pageSize=8192\n");
        CliRun both = CliRun.of("load", dump.toString(), "--to", target.toString(), "--page-size", "16384", "--new-config", props.toString());
        assertEquals(Main.USAGE, both.code(), both.toString()); // the file's page size won, silently
        assertTrue(both.err().contains("--page-size is not taken with --new-config"), both.toString());
        assertEquals(Main.OK, CliRun.of("load", dump.toString(), "--to", target.toString(), "--page-size", "16384").code());
    }

    @Test
    void aDumpAsOfASnapshotKnowsOnlyTheTablesItHeld() {
        Path dir = tmp.resolve("asof");
        long snap;
        try (Varve s = Varve.open(SmallStore.config(dir).build())) {
            s.table("old").put(utf8("k"), utf8("v"));
            snap = s.snapshotNow();
            s.table("newer").put(utf8("k"), utf8("v"));
        }
        CliRun r = CliRun.of("dump", dir.toString(), "--as-of", Long.toString(snap), "--table", "newer", "--out", tmp.resolve("x.dump").toString());
        assertEquals(Main.USAGE, r.code(), r.toString());
        assertTrue(r.err().contains("had no table 'newer' as of snapshot " + snap), r.toString());
        assertEquals(Main.OK, CliRun.of("dump", dir.toString(), "--as-of", Long.toString(snap), "--out", tmp.resolve("y.dump").toString()).code());
    }

    @Test
    void invertedRangesNegativeLimitsAndMissingDumpsAreUsageErrors() {
        Path dir = store();
        CliRun scan = CliRun.of("scan", dir.toString(), "--table", "h16", "--from", "b5", "--to", "b1");
        assertEquals(Main.USAGE, scan.code(), scan.toString());
        assertTrue(scan.err().contains("--from b5 sorts after --to b1"), scan.toString());
        assertEquals(Main.USAGE, CliRun.of("scan", dir.toString(), "--table", "h16", "--limit", "-3").code());
        assertEquals(Main.USAGE, CliRun.of("wal-dump", dir.toString(), "--limit", "-3").code());
        assertEquals(Main.OK, CliRun.of("scan", dir.toString(), "--table", "h16", "--limit", "0").code());
        CliRun missing = CliRun.of("load", tmp.resolve("nonexistent.dump").toString(), "--to", tmp.resolve("t").toString());
        assertEquals(Main.USAGE, missing.code(), missing.toString());
        assertTrue(missing.err().contains("nonexistent.dump does not exist"), missing.toString());
    }
}
