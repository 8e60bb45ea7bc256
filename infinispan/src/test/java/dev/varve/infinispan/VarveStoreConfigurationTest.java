package dev.varve.infinispan;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.ForwardingFileIOFactory;
import org.infinispan.Cache;
import org.infinispan.commons.CacheConfigurationException;
import org.infinispan.commons.dataconversion.MediaType;
import org.infinispan.configuration.cache.Configuration;
import org.infinispan.configuration.cache.ConfigurationBuilder;
import org.infinispan.configuration.global.GlobalConfigurationBuilder;
import org.infinispan.configuration.global.GlobalStateConfiguration;
import org.infinispan.configuration.parsing.ConfigurationBuilderHolder;
import org.infinispan.configuration.parsing.ParserRegistry;
import org.infinispan.manager.DefaultCacheManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The programmatic and the declarative configuration give the same store, and reject bad values by name. */
@Timeout(120)
class VarveStoreConfigurationTest {
    @TempDir
    Path dir;

    private String xml(String storeAttributes) {
        return """
                <infinispan>
                  <cache-container default-cache="c">
                    <local-cache name="c">
                      <persistence>
                        <varve-store xmlns="urn:varve:infinispan:store:0.1" path="%s" %s/>
                      </persistence>
                    </local-cache>
                  </cache-container>
                </infinispan>
                """.formatted(dir, storeAttributes);
    }

    private static VarveStoreConfiguration storeOf(Configuration c) {
        return (VarveStoreConfiguration) c.persistence().stores().get(0);
    }

    @Test
    void xmlSetsEveryVarveAttribute() {
        ConfigurationBuilderHolder holder = new ParserRegistry().parse(xml("data-region-size=\"33554432\" checkpoint-buffer-size=\"4194304\""
                + " capture-buffer-size=\"1048576\" wal-segment-size=\"8388608\" recovery-mode=\"WAL_PHYSICAL\" recovery-compression=\"SKIP_GARBAGE\" wal-sync-mode=\"FSYNC\""
                + " retention=\"keepLast(3),keepAll()\" preload=\"true\""));
        VarveStoreConfiguration s = storeOf(holder.getNamedConfigurationBuilders().get("c").build());
        assertEquals(dir.toString(), s.location());
        assertEquals(32L << 20, s.dataRegionSize());
        assertEquals(4L << 20, s.checkpointBufferSize());
        assertEquals(1L << 20, s.captureBufferSize());
        assertEquals(1L << 20, s.varveConfig(dir).captureBufferSize(), "the store opens with it");
        assertEquals(8L << 20, s.walSegmentSize());
        assertEquals(RecoveryMode.WAL_PHYSICAL, s.recoveryMode());
        assertEquals(RecoveryCompression.SKIP_GARBAGE, s.recoveryCompression());
        assertEquals(WalSyncMode.FSYNC, s.walSyncMode());
        assertEquals("keepLast(3),keepAll()", s.retention());
        assertTrue(s.preload(), "Infinispan's common store attributes are read too");
    }

    @Test
    void programmaticAndXmlGiveTheSameStore() {
        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.toString()).dataRegionSize(32L << 20)
                .captureBufferSize(1L << 20).recoveryMode(RecoveryMode.WAL_PHYSICAL).walSyncMode(WalSyncMode.FSYNC).retention("keepLast(3)");
        VarveStoreConfiguration programmatic = storeOf(cb.build());
        VarveStoreConfiguration declarative = storeOf(new ParserRegistry().parse(xml("data-region-size=\"33554432\" capture-buffer-size=\"1048576\" recovery-mode=\"WAL_PHYSICAL\""
                + " wal-sync-mode=\"FSYNC\" retention=\"keepLast(3)\"")).getNamedConfigurationBuilders().get("c").build());
        assertEquals(programmatic.attributes(), declarative.attributes());
    }

    /** The file-IO seam is set in code only: never written out, and a configuration read back gets the standard one. */
    @Test
    void theFileIoSeamIsNotWrittenOut() {
        FileIOFactory io = new ForwardingFileIOFactory() { };
        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.toString()).fileIO(io);
        assertSame(io, storeOf(cb.build()).fileIO());
        for (MediaType type : new MediaType[]{MediaType.APPLICATION_XML, MediaType.APPLICATION_JSON, MediaType.APPLICATION_YAML}) {
            String text = cb.build().toStringConfiguration("c", type, false);
            assertFalse(text.contains("file-io"), text);
            VarveStoreConfiguration back = storeOf(new ParserRegistry().parse(text, type).getNamedConfigurationBuilders().get("c").build());
            assertSame(FileIOFactory.standard(), back.fileIO(), text);
        }
        assertMessage(IllegalArgumentException.class, "fileIO is null",
                () -> new ConfigurationBuilder().persistence().addStore(VarveStoreConfigurationBuilder.class).fileIO(null));
    }

    /**
     * The seam is this node's own: a configuration that sets it matches the same one without it (Infinispan compares
     * with {@code matches} a cache defined in code against the one its global state persisted, which never holds the
     * seam, and refuses to start on a mismatch).
     */
    @Test
    void aConfigurationWithTheFileIoSeamMatchesTheSameWithout() {
        ConfigurationBuilder with = new ConfigurationBuilder();
        with.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.toString()).fileIO(new ForwardingFileIOFactory() { });
        ConfigurationBuilder without = new ConfigurationBuilder();
        without.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.toString());
        assertTrue(with.build().matches(without.build()));
        assertTrue(without.build().matches(with.build()));
    }

    /**
     * Infinispan writes a cache's configuration out and parses it back whenever it leaves the JVM (a cache created
     * through {@code administration()} goes to every node and into the global state as text): every format it
     * writes must read back as the same store.
     */
    @Test
    void theConfigurationSurvivesInfinispansOwnSerialization() {
        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.toString()).dataRegionSize(32L << 20)
                .captureBufferSize(2L << 20).recoveryMode(RecoveryMode.WAL_PHYSICAL).walSyncMode(WalSyncMode.FSYNC).retention("keepLast(3)").preload(true)
                .async().enable().modificationQueueSize(77);
        VarveStoreConfiguration original = storeOf(cb.build());
        for (MediaType type : new MediaType[]{MediaType.APPLICATION_XML, MediaType.APPLICATION_JSON, MediaType.APPLICATION_YAML}) {
            String text = cb.build().toStringConfiguration("c", type, false);
            VarveStoreConfiguration back = storeOf(new ParserRegistry().parse(text, type).getNamedConfigurationBuilders().get("c").build());
            assertEquals(original.attributes(), back.attributes(), text);
            assertEquals(original.async().attributes(), back.async().attributes(), text);
        }
    }

    @Test
    void aCacheConfiguredInXmlKeepsItsEntriesAcrossRestarts() throws Exception {
        String config = xml("data-region-size=\"16777216\" checkpoint-buffer-size=\"2097152\" wal-segment-size=\"4194304\"");
        try (DefaultCacheManager cm = new DefaultCacheManager(new java.io.ByteArrayInputStream(config.getBytes()))) {
            Cache<String, String> c = cm.getCache("c");
            for (int i = 0; i < 500; i++) c.put("k" + i, "v" + i);
        }
        assertTrue(Files.isDirectory(dir.resolve("c")), "the cache's Varve store lives in path/cache-name");
        try (DefaultCacheManager cm = new DefaultCacheManager(new java.io.ByteArrayInputStream(config.getBytes()))) {
            Cache<String, String> c = cm.getCache("c");
            for (int i = 0; i < 500; i++) assertEquals("v" + i, c.get("k" + i));
            assertNull(c.get("absent"));
            String tooLong = "K".repeat(2000); // longer than a stored key can be: absent, as without a store
            assertNull(c.get(tooLong));
            assertTrue(!c.containsKey(tooLong));
            assertNull(c.remove(tooLong));
        }
    }

    @Test
    void theStoreDirectoryIsTheCacheNameUnderTheLocationAndNowhereElse() {
        GlobalStateConfiguration noGlobalState = new GlobalConfigurationBuilder().globalState().enabled(false).build().globalState();
        assertEquals(dir.resolve("c"), VarveStore.storeDirectory(dir.toString(), noGlobalState, "c"));
        for (String name : new String[]{"../escaped", "a/b", dir.resolve("elsewhere").toString(), ".."}) {
            CacheConfigurationException e = assertThrows(CacheConfigurationException.class, () -> VarveStore.storeDirectory(dir.toString(), noGlobalState, name));
            assertTrue(e.getMessage().contains("cache name '" + name + "'"), e.getMessage());
        }
        CacheConfigurationException e = assertThrows(CacheConfigurationException.class, () -> VarveStore.storeDirectory(null, noGlobalState, "c"));
        assertTrue(e.getMessage().contains("has no location"), e.getMessage());
        GlobalStateConfiguration globalState = new GlobalConfigurationBuilder().globalState().enabled(true)
                .persistentLocation(dir.resolve("global").toString()).build().globalState();
        assertEquals(dir.resolve("global").resolve("c"), VarveStore.storeDirectory(null, globalState, "c"));
    }

    /**
     * As with Infinispan's own file stores, a relative location lies under the global persistent location when global
     * state is on; it used to be taken from the working directory, so a node started from another directory (or an
     * Infinispan Server, whose data directory is not its working directory) came up with an empty store.
     */
    @Test
    void aRelativeLocationIsUnderTheGlobalPersistentLocation() {
        GlobalStateConfiguration globalState = new GlobalConfigurationBuilder().globalState().enabled(true)
                .persistentLocation(dir.resolve("global").toString()).build().globalState();
        assertEquals(dir.resolve("global").resolve("varve").resolve("c"), VarveStore.storeDirectory("varve", globalState, "c"));
        GlobalStateConfiguration noGlobalState = new GlobalConfigurationBuilder().globalState().enabled(false).build().globalState();
        assertEquals(Path.of("varve").toAbsolutePath().resolve("c"), VarveStore.storeDirectory("varve", noGlobalState, "c"));
    }

    @Test
    void badValuesAreRejectedByName() {
        VarveStoreConfigurationBuilder b = new ConfigurationBuilder().persistence().addStore(VarveStoreConfigurationBuilder.class);
        assertMessage(IllegalArgumentException.class, "location", () -> b.location(null));
        assertMessage(IllegalArgumentException.class, "walSyncMode", () -> b.walSyncMode(null));
        assertMessage(IllegalArgumentException.class, "retention", () -> b.retention("keepSome(3)"));
        ConfigurationBuilder small = new ConfigurationBuilder();
        small.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.toString()).dataRegionSize(1024);
        assertMessage(CacheConfigurationException.class, "dataRegionSize", small::build);
        assertMessage(RuntimeException.class, "wal-sync-mode", () -> new ParserRegistry().parse(xml("wal-sync-mode=\"SOMETIMES\"")));
        assertMessage(RuntimeException.class, "expected one of " + java.util.Arrays.toString(WalSyncMode.values()),
                () -> new ParserRegistry().parse(xml("wal-sync-mode=\"SOMETIMES\"")));
        assertMessage(RuntimeException.class, "data-region-size", () -> new ParserRegistry().parse(xml("data-region-size=\"big\"")));
        // a value out of Varve's range is refused when the configuration is built: XML users are told their attribute's name
        for (String[] outOfRange : new String[][]{{"data-region-size", "1024"}, {"checkpoint-buffer-size", "1"}, {"capture-buffer-size", "1024"}, {"wal-segment-size", "99999999999999"}}) {
            assertMessage(CacheConfigurationException.class, outOfRange[0] + " (", () -> new ParserRegistry()
                    .parse(xml(outOfRange[0] + "=\"" + outOfRange[1] + "\"")).getNamedConfigurationBuilders().get("c").build());
        }
        assertMessage(RuntimeException.class, "expected a number of bytes", () -> new ParserRegistry().parse(xml("data-region-size=\"big\"")));
        // the schema types the enum attributes as tokens: surrounding blanks do not count
        assertEquals(RecoveryMode.WAL_PHYSICAL, storeOf(new ParserRegistry().parse(xml("recovery-mode=\" WAL_PHYSICAL \""))
                .getNamedConfigurationBuilders().get("c").build()).recoveryMode());
    }

    /**
     * A non-segmented store gets segment 0 for every key from Infinispan but is asked for entries by real segment (state
     * transfer, segment-filtered streams), and a store switched between the two modes across a restart found 2 of 40
     * keys while still counting all 40: the store refuses {@code segmented="false"} by name.
     */
    @Test
    void aNonSegmentedStoreIsRefusedByName() {
        ConfigurationBuilder cb = new ConfigurationBuilder();
        cb.persistence().addStore(VarveStoreConfigurationBuilder.class).location(dir.toString()).segmented(false);
        assertMessage(CacheConfigurationException.class, "segmented", cb::build);
        assertMessage(CacheConfigurationException.class, "segmented", () -> new ParserRegistry().parse(xml("segmented=\"false\""))
                .getNamedConfigurationBuilders().get("c").build());
    }

    private static void assertMessage(Class<? extends Throwable> type, String part, org.junit.jupiter.api.function.Executable e) {
        Throwable t = assertThrows(type, e);
        StringBuilder all = new StringBuilder();
        for (Throwable x = t; x != null; x = x.getCause()) all.append(x.getMessage()).append(" | ");
        assertTrue(all.toString().contains(part), "expected '" + part + "' in: " + all);
    }
}
