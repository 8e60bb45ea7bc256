package dev.varve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.core.io.DirectoryFingerprint;
import dev.varve.engine.Cursor;
import dev.varve.engine.FixtureStores;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code varve salvage}: everything from a sound store, all but a damaged leaf's entries from a damaged one, page files when it does not open. */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class CliSalvageTest {
    private static final int PAGE = 4096;

    @TempDir
    static Path tmp;
    static Path healthy;

    @BeforeAll
    static void store() {
        healthy = tmp.resolve("healthy");
        FixtureStores.create(healthy, "healthy");
    }

    private static Path copy(String name) throws IOException {
        return StoreCopy.of(healthy, tmp.resolve(name));
    }

    private static Map<String, TreeMap<String, String>> salvaged(Path dir) {
        try (Varve v = Varve.open(SmallStore.config(dir).build())) {
            return CliReadCommandsTest.contents(v::table);
        }
    }

    @Test
    void soundStoreIsCopiedWhole() {
        Path to = tmp.resolve("whole");
        CliRun r = CliReadCommandsTest.unchanged(healthy, "salvage", healthy.toString(), "--to", to.toString());
        assertEquals(Main.OK, r.code(), r.toString());
        assertEquals(CliReadCommandsTest.hex(FixtureStores.model(FixtureStores.ROUNDS)), salvaged(to));
    }

    @Test
    void damagedLeafLosesOnlyItsEntries() throws IOException {
        Path s = copy("leaf");
        Path file = s.resolve("pages/t00001-p00000.page");
        long leaf = -1;
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            for (long off = PAGE; off < f.length() && leaf < 0; off += PAGE) {
                f.seek(off + 12);
                if (f.read() == 3) leaf = off; // PageHeader.TYPE_LEAF
            }
            assertTrue(leaf > 0, "no leaf page in " + file);
            f.seek(leaf + 200);
            f.write(f.read() ^ 0xff);
        }
        Path to = tmp.resolve("leaf-salvaged");
        CliRun r = CliReadCommandsTest.unchanged(s, "salvage", "--json", s.toString(), "--to", to.toString());
        assertEquals(Main.DAMAGE, r.code(), r.toString());
        long offset = leaf;
        assertTrue(r.damage().stream().anyMatch(d -> Path.of(d.file()).equals(file) && d.offset() == offset), r.out());
        Map<String, TreeMap<String, String>> want = CliReadCommandsTest.hex(FixtureStores.model(FixtureStores.ROUNDS));
        Map<String, TreeMap<String, String>> got = salvaged(to);
        assertEquals(want.get("accounts"), got.get("accounts"));
        TreeMap<String, String> orders = got.get("orders");
        assertTrue(orders.size() < want.get("orders").size() && orders.size() > want.get("orders").size() / 2, orders.size() + " of " + want.get("orders").size());
        orders.forEach((k, v) -> assertEquals(want.get("orders").get(k), v, k));
    }

    /**
     * A partition whose tree is of another format version is not salvaged but said to be, with the reason: salvage read
     * its leaves as this build's format and failed with an index out of bounds.
     */
    @Test
    void aTreeOfAnotherFormatVersionIsRefusedNotMisread() throws IOException {
        Path s = copy("other-tree-version");
        Path file = s.resolve("pages/t00001-p00000.page");
        FixtureStores.setTreeFormatVersion(file, PAGE, 1);
        Map<String, String> before = DirectoryFingerprint.of(s);
        CliRun r = CliRun.of("salvage", s.toString(), "--to", tmp.resolve("other-tree-version-salvaged").toString());
        assertEquals(Main.DAMAGE, r.code(), r.toString()); // that partition's entries are not salvaged, and it says why
        assertTrue(r.out().contains("every entry of orders partition 0 in it is lost: unsupported B+tree format version 1"), r.toString());
        assertTrue(!r.toString().contains("\tat ") && !r.toString().contains("Exception"), r.toString());
        assertEquals(before, DirectoryFingerprint.of(s));
    }

    @Test
    void storeThatDoesNotOpenIsSalvagedFromItsPageFiles() throws IOException {
        Path s = copy("noopen");
        try (Stream<Path> l = Files.list(s.resolve("checkpoints"))) {
            for (Path p : (Iterable<Path>) l::iterator) Files.write(p, new byte[]{1, 2, 3}); // every marker damaged
        }
        Map<String, String> before = DirectoryFingerprint.of(s);
        Path to = tmp.resolve("noopen-salvaged");
        CliRun r = CliRun.of("salvage", s.toString(), "--to", to.toString());
        assertEquals(before, DirectoryFingerprint.of(s));
        assertEquals(Main.DAMAGE, r.code(), r.toString());
        assertTrue(r.out().contains("source: page files only; the store did not open"), r.out());
        assertTrue(r.out().contains("writes logged after the last checkpoint"), "salvage says the WAL's tail is not in: " + r.out());
        assertEquals(CliReadCommandsTest.hex(FixtureStores.model(FixtureStores.ROUNDS)), salvaged(to)); // closed cleanly: the page files hold it all
    }

    private static void flip(Path file, long offset) throws IOException {
        StoreCopy.flip(file, offset, 0xff);
    }

    /** Every table of a salvaged store, each partition's entries merged, values in hex. */
    private static Map<String, TreeMap<String, String>> everyTable(Path dir) {
        Map<String, TreeMap<String, String>> out = new TreeMap<>();
        try (Varve v = Varve.open(SmallStore.config(dir).build())) {
            for (String name : v.tables()) {
                Table t = v.table(name);
                TreeMap<String, String> m = new TreeMap<>();
                for (int p = 0; p < t.partitions(); p++) {
                    try (Cursor c = t.partition(p).scan(null, null)) {
                        while (c.next()) m.put(new String(c.key(), StandardCharsets.UTF_8), HexFormat.of().formatHex(c.value()));
                    }
                }
                out.put(name, m);
            }
        }
        return out;
    }

    /**
     * A catalog page file that cannot be read (its header damaged, or the file cut short) loses the tables' names, not
     * their entries: each table's page files are salvaged under a placeholder name, the catalog is listed as lost, and
     * the exit is 1. Salvage used to recover nothing from such a store, printing {@code entries: {}} and exit 2 with no
     * word of what had happened.
     */
    @Test
    void aLostCatalogLosesTheTablesNamesNotTheirEntries() throws IOException {
        Map<String, TreeMap<String, String>> want = CliReadCommandsTest.hex(FixtureStores.model(FixtureStores.ROUNDS));
        for (String damage : List.of("header", "truncated")) {
            Path s = copy("catalog-" + damage);
            Path catalog = s.resolve("pages/t00000-p00000.page");
            if (damage.equals("header")) flip(catalog, 20);
            else try (RandomAccessFile f = new RandomAccessFile(catalog.toFile(), "rw")) {
                f.setLength(100);
            }
            Path to = tmp.resolve("catalog-" + damage + "-salvaged");
            CliRun r = CliReadCommandsTest.unchanged(s, "salvage", "--json", s.toString(), "--to", to.toString());
            assertEquals(Main.DAMAGE, r.code(), damage + ": " + r);
            assertTrue(r.damage().stream().anyMatch(d -> Path.of(d.file()).equals(catalog) && d.what().contains("placeholder names")), damage + ": " + r);
            Map<String, TreeMap<String, String>> got = everyTable(to);
            assertEquals(Set.of("table-1", "table-2"), got.keySet(), damage);
            assertEquals(Set.copyOf(want.values()), Set.copyOf(got.values()), damage + ": each table whole, under a placeholder name");
        }
    }

    /** A deleted page file of a partition the catalog lists is named as lost; it showed only in the source line. */
    @Test
    void aMissingPageFileIsListedAsLost() throws IOException {
        Path s = copy("missing-file");
        Path file = s.resolve("pages/t00001-p00002.page");
        Files.delete(file);
        CliRun r = CliReadCommandsTest.unchanged(s, "salvage", "--json", s.toString(), "--to", tmp.resolve("missing-file-salvaged").toString());
        assertEquals(Main.DAMAGE, r.code(), r.toString());
        assertTrue(r.damage().stream().anyMatch(d -> Path.of(d.file()).equals(file) && d.offset() == 0
                && d.what().contains("page file is missing: every entry of orders partition 2 is lost")), r.out());
    }

    /**
     * A store that does not open (a damaged drop log) and was closed cleanly: its WAL after the checkpoint's mark holds
     * no write, so a salvage from its page files loses nothing (exit 0, nothing listed); it reported the writes after the
     * last checkpoint lost. A crashed one, whose WAL holds a batch after the mark, still lists them, from its LSN.
     */
    @Test
    void aWalTailWithoutWritesLosesNothing() throws IOException {
        Path s = copy("clean-no-open");
        flip(s.resolve("archive/drops.log"), 5);
        Path to = tmp.resolve("clean-no-open-salvaged");
        CliRun r = CliReadCommandsTest.unchanged(s, "salvage", "--json", s.toString(), "--to", to.toString());
        assertEquals(Main.OK, r.code(), r.toString());
        assertTrue(r.out().contains("the store did not open") && r.out().contains("\"lost\":[]"), r.out());
        assertEquals(CliReadCommandsTest.hex(FixtureStores.model(FixtureStores.ROUNDS)), salvaged(to));

        Path crashed = tmp.resolve("crashed-no-open");
        FixtureStores.create(crashed, "crashed");
        flip(crashed.resolve("archive/drops.log"), 5);
        r = CliReadCommandsTest.unchanged(crashed, "salvage", crashed.toString(), "--to", tmp.resolve("crashed-no-open-salvaged").toString());
        assertEquals(Main.DAMAGE, r.code(), r.toString());
        assertTrue(r.out().contains("writes logged after the last checkpoint (from LSN "), r.out());
    }

    @Test
    void salvageRefusesAStoreOpenForWriting() throws IOException {
        Path store = copy("in-use");
        Path target = tmp.resolve("in-use-salvaged");
        Varve open = Varve.open(FixtureStores.config(store));
        try {
            CliRun r = CliRun.of("salvage", store.toString(), "--to", target.toString());
            assertEquals(Main.UNUSABLE, r.code(), r.toString());
            assertTrue(r.err().contains("already open") || r.err().contains("open for writing"), r.toString());
            assertFalse(r.out().contains("page files only"), r.toString());
        } finally {
            open.close();
        }
        assertFalse(Files.exists(target), "salvage created its target");
    }

    @Test
    void aSoundStoreWithoutTablesIsSalvagedWholeAsAnEmptyStore() {
        Path empty = tmp.resolve("no-tables");
        try (Varve s = Varve.open(SmallStore.fresh(empty).build())) {
            assertTrue(s.tables().isEmpty());
        }
        Path to = tmp.resolve("no-tables-salvaged");
        CliRun r = CliRun.of("salvage", empty.toString(), "--to", to.toString());
        assertEquals(Main.OK, r.code(), r.toString()); // was 2, "nothing could be read", while it printed lost: []
        try (Varve c = Varve.openReadOnly(SmallStore.config(to).build())) {
            assertTrue(c.tables().isEmpty());
        }
    }
}
