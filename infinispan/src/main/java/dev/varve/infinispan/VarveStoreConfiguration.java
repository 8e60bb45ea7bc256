package dev.varve.infinispan;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FileIOFactory;
import org.infinispan.commons.configuration.BuiltBy;
import org.infinispan.commons.configuration.ConfigurationFor;
import org.infinispan.commons.configuration.attributes.AttributeDefinition;
import org.infinispan.commons.configuration.attributes.AttributeSet;
import org.infinispan.configuration.cache.AbstractStoreConfiguration;
import org.infinispan.configuration.cache.AsyncStoreConfiguration;
import org.infinispan.configuration.serializing.SerializedWith;

import java.nio.file.Path;

/**
 * The settings of a {@link VarveStore}: where the cache's store lives and the Varve settings that matter to a grid
 * node. Each cache gets its own Varve store in {@code <location>/<cache name>}; every setting left unset keeps
 * Varve's default ({@link VarveConfig}).
 */
@ConfigurationFor(VarveStore.class)
@BuiltBy(VarveStoreConfigurationBuilder.class)
@SerializedWith(VarveStoreConfigurationSerializer.class)
public class VarveStoreConfiguration extends AbstractStoreConfiguration<VarveStoreConfiguration> {
    /** Directory holding one Varve store per cache; null: the global persistent location. */
    static final AttributeDefinition<String> LOCATION = AttributeDefinition.builder(XmlNames.PATH, null, String.class).immutable().build();
    static final AttributeDefinition<Long> DATA_REGION_SIZE = AttributeDefinition.builder(XmlNames.DATA_REGION_SIZE, ConfigLimits.DATA_REGION_SIZE_DEFAULT).immutable().build();
    static final AttributeDefinition<Long> CHECKPOINT_BUFFER_SIZE = AttributeDefinition.builder(XmlNames.CHECKPOINT_BUFFER_SIZE, ConfigLimits.CHECKPOINT_BUFFER_SIZE_DEFAULT).immutable().build();
    static final AttributeDefinition<Long> CAPTURE_BUFFER_SIZE = AttributeDefinition.builder(XmlNames.CAPTURE_BUFFER_SIZE, ConfigLimits.CAPTURE_BUFFER_SIZE_DEFAULT).immutable().build();
    static final AttributeDefinition<Long> WAL_SEGMENT_SIZE = AttributeDefinition.builder(XmlNames.WAL_SEGMENT_SIZE, ConfigLimits.WAL_SEGMENT_SIZE_DEFAULT).immutable().build();
    static final AttributeDefinition<RecoveryMode> RECOVERY_MODE = AttributeDefinition.builder(XmlNames.RECOVERY_MODE, ConfigLimits.RECOVERY_MODE_DEFAULT).immutable().build();
    static final AttributeDefinition<RecoveryCompression> RECOVERY_COMPRESSION = AttributeDefinition.builder(XmlNames.RECOVERY_COMPRESSION, ConfigLimits.RECOVERY_COMPRESSION_DEFAULT).immutable().build();
    static final AttributeDefinition<WalSyncMode> WAL_SYNC_MODE = AttributeDefinition.builder(XmlNames.WAL_SYNC_MODE, ConfigLimits.WAL_SYNC_MODE_DEFAULT).immutable().build();
    /** Snapshot retention in {@link RankTreePolicy#parse} syntax; null keeps every snapshot. */
    static final AttributeDefinition<String> RETENTION = AttributeDefinition.builder(XmlNames.RETENTION, null, String.class).immutable().build();
    /**
     * The file-IO seam every file access of the store goes through ({@code Varve.open(config, io)}); set in code only,
     * never written to XML (a configuration sent to another node gets the standard one there).
     */
    static final AttributeDefinition<FileIOFactory> FILE_IO = AttributeDefinition.builder("file-io", FileIOFactory.standard(), FileIOFactory.class)
            .immutable().autoPersist(false).global(false).build(); // nor matched: a node's own, as a persisted copy never holds it

    public static AttributeSet attributeDefinitionSet() {
        return new AttributeSet(VarveStoreConfiguration.class, AbstractStoreConfiguration.attributeDefinitionSet(), LOCATION, DATA_REGION_SIZE,
                CHECKPOINT_BUFFER_SIZE, CAPTURE_BUFFER_SIZE, WAL_SEGMENT_SIZE, RECOVERY_MODE, RECOVERY_COMPRESSION, WAL_SYNC_MODE, RETENTION, FILE_IO);
    }

    public VarveStoreConfiguration(AttributeSet attributes, AsyncStoreConfiguration async) {
        super(XmlNames.Element.VARVE_STORE, attributes, async);
    }

    /** The configured directory, or null for the global persistent location. */
    public String location() {
        return attributes.attribute(LOCATION).get();
    }

    public long dataRegionSize() {
        return attributes.attribute(DATA_REGION_SIZE).get();
    }

    public long checkpointBufferSize() {
        return attributes.attribute(CHECKPOINT_BUFFER_SIZE).get();
    }

    public long captureBufferSize() {
        return attributes.attribute(CAPTURE_BUFFER_SIZE).get();
    }

    public long walSegmentSize() {
        return attributes.attribute(WAL_SEGMENT_SIZE).get();
    }

    public RecoveryMode recoveryMode() {
        return attributes.attribute(RECOVERY_MODE).get();
    }

    public RecoveryCompression recoveryCompression() {
        return attributes.attribute(RECOVERY_COMPRESSION).get();
    }

    public WalSyncMode walSyncMode() {
        return attributes.attribute(WAL_SYNC_MODE).get();
    }

    /** The retention policy text, or null for "keep every snapshot". */
    public String retention() {
        return attributes.attribute(RETENTION).get();
    }

    /** The file-IO seam the store opens its files through (the standard one unless set in code). */
    public FileIOFactory fileIO() {
        return attributes.attribute(FILE_IO).get();
    }

    /** The Varve configuration of the store in {@code dir} (validated: a bad combination throws naming the field). */
    VarveConfig varveConfig(Path dir) {
        VarveConfig.Builder b = VarveConfig.builder().path(dir).dataRegionSize(dataRegionSize()).checkpointBufferSize(checkpointBufferSize())
                .captureBufferSize(captureBufferSize()).walSegmentSize(walSegmentSize()).recoveryMode(recoveryMode()).recoveryCompression(recoveryCompression())
                .walSyncMode(walSyncMode());
        if (retention() != null) b.retention(RankTreePolicy.parse(retention()));
        return b.build();
    }
}
