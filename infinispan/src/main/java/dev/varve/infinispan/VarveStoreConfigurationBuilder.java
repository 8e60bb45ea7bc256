package dev.varve.infinispan;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import org.infinispan.commons.CacheConfigurationException;
import org.infinispan.commons.configuration.Combine;
import org.infinispan.configuration.cache.AbstractStoreConfiguration;
import org.infinispan.configuration.cache.AbstractStoreConfigurationBuilder;
import org.infinispan.configuration.cache.PersistenceConfigurationBuilder;

import java.nio.file.Path;

import static dev.varve.infinispan.VarveStoreConfiguration.CAPTURE_BUFFER_SIZE;
import static dev.varve.infinispan.VarveStoreConfiguration.CHECKPOINT_BUFFER_SIZE;
import static dev.varve.infinispan.VarveStoreConfiguration.DATA_REGION_SIZE;
import static dev.varve.infinispan.VarveStoreConfiguration.FILE_IO;
import static dev.varve.infinispan.VarveStoreConfiguration.LOCATION;
import static dev.varve.infinispan.VarveStoreConfiguration.RECOVERY_COMPRESSION;
import static dev.varve.infinispan.VarveStoreConfiguration.RECOVERY_MODE;
import static dev.varve.infinispan.VarveStoreConfiguration.RETENTION;
import static dev.varve.infinispan.VarveStoreConfiguration.WAL_SEGMENT_SIZE;
import static dev.varve.infinispan.VarveStoreConfiguration.WAL_SYNC_MODE;

/**
 * Programmatic configuration of a {@link VarveStore}:
 * <pre>{@code
 * builder.persistence().addStore(VarveStoreConfigurationBuilder.class)
 *        .location("/var/lib/grid/varve")
 *        .dataRegionSize(512L << 20)
 *        .recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).recoveryCompression(RecoveryCompression.SNAPPY)
 *        .walSyncMode(WalSyncMode.LOG_ONLY)
 *        .retention("keepLast(24),keepFor(P7D)");
 * }</pre>
 * Setters reject null or malformed values with {@link IllegalArgumentException}; {@link #validate()} checks the
 * settings together the way Varve will and throws {@link CacheConfigurationException} naming the field.
 */
public class VarveStoreConfigurationBuilder extends AbstractStoreConfigurationBuilder<VarveStoreConfiguration, VarveStoreConfigurationBuilder> {

    public VarveStoreConfigurationBuilder(PersistenceConfigurationBuilder builder) {
        super(builder, VarveStoreConfiguration.attributeDefinitionSet());
    }

    /**
     * Directory holding one Varve store per cache ({@code <location>/<cache name>}); a relative one lies under the
     * global persistent location when global state is enabled.
     */
    public VarveStoreConfigurationBuilder location(String location) {
        if (location == null || location.isBlank()) throw new IllegalArgumentException("location is null or blank");
        attributes.attribute(LOCATION).set(location);
        return this;
    }

    /** Off-heap page memory of the cache's store, bytes. */
    public VarveStoreConfigurationBuilder dataRegionSize(long bytes) {
        attributes.attribute(DATA_REGION_SIZE).set(bytes);
        return this;
    }

    /** Checkpoint copy-on-write buffer, bytes. */
    public VarveStoreConfigurationBuilder checkpointBufferSize(long bytes) {
        attributes.attribute(CHECKPOINT_BUFFER_SIZE).set(bytes);
        return this;
    }

    /** Capture buffer of split snapshots (pre-states on their way to the archive), bytes. */
    public VarveStoreConfigurationBuilder captureBufferSize(long bytes) {
        attributes.attribute(CAPTURE_BUFFER_SIZE).set(bytes);
        return this;
    }

    /** WAL segment file size, bytes. */
    public VarveStoreConfigurationBuilder walSegmentSize(long bytes) {
        attributes.attribute(WAL_SEGMENT_SIZE).set(bytes);
        return this;
    }

    /** Torn-page protection: recovery files or physical WAL records. */
    public VarveStoreConfigurationBuilder recoveryMode(RecoveryMode mode) {
        attributes.attribute(RECOVERY_MODE).set(nonNull(mode, "recoveryMode"));
        return this;
    }

    /** Compression of checkpoint recovery files. */
    public VarveStoreConfigurationBuilder recoveryCompression(RecoveryCompression compression) {
        attributes.attribute(RECOVERY_COMPRESSION).set(nonNull(compression, "recoveryCompression"));
        return this;
    }

    /** How durable a write is when the store acknowledges it. */
    public VarveStoreConfigurationBuilder walSyncMode(WalSyncMode mode) {
        attributes.attribute(WAL_SYNC_MODE).set(nonNull(mode, "walSyncMode"));
        return this;
    }

    /** Snapshot retention per rank level, e.g. {@code keepLast(24),keepFor(P7D),keepAll()} ({@link RankTreePolicy#parse}). */
    public VarveStoreConfigurationBuilder retention(String levels) {
        RankTreePolicy.parse(levels); // throws IllegalArgumentException naming the text
        attributes.attribute(RETENTION).set(levels);
        return this;
    }

    /**
     * Every file access of the store goes through {@code io} (as with {@code Varve.open(config, io)}): for injecting
     * faults in tests, or wrapping the file system. Code only: XML has no such attribute, and a configuration sent to
     * another node (a cache created through {@code administration()}) gets the standard file IO there.
     */
    public VarveStoreConfigurationBuilder fileIO(FileIOFactory io) {
        attributes.attribute(FILE_IO).set(nonNull(io, "fileIO"));
        return this;
    }

    private static <T> T nonNull(T v, String what) {
        if (v == null) throw new IllegalArgumentException(what + " is null");
        return v;
    }

    @Override
    public void validate() {
        super.validate();
        // Infinispan hands a non-segmented store segment 0 for every key yet still asks it for entries by real segment
        // (state transfer, segment-filtered streams), and each segment is a partition here: refuse it (the SPI's way)
        if (!attributes.attribute(AbstractStoreConfiguration.SEGMENTED).get())
            throw new CacheConfigurationException("invalid varve-store configuration: segmented=\"false\" is not supported; the store keeps each "
                    + "segment in its own partition (leave segmented at its default, true)");
        try {
            create().varveConfig(Path.of("validation-only")); // builds nothing on disk
        } catch (IllegalArgumentException e) {
            throw new CacheConfigurationException("invalid varve-store configuration: " + XmlNames.withAttributeName(e.getMessage()), e);
        }
    }

    @Override
    public VarveStoreConfiguration create() {
        return new VarveStoreConfiguration(attributes.protect(), async.create());
    }

    @Override
    public VarveStoreConfigurationBuilder read(VarveStoreConfiguration template, Combine combine) {
        super.read(template, combine);
        return this;
    }

    @Override
    public VarveStoreConfigurationBuilder self() {
        return this;
    }
}
