package dev.varve.infinispan;

import org.infinispan.protostream.FileDescriptorSource;
import org.infinispan.protostream.MessageMarshaller;
import org.infinispan.protostream.SerializationContext;
import org.infinispan.protostream.SerializationContextInitializer;

import java.io.IOException;
import java.util.function.BiFunction;

/**
 * Teaches Infinispan's marshaller the tasks Varve sends through the cluster executor: {@link CacheHistory}'s three, a
 * message of the cache name and the label each, and {@link ClusterRecovery}'s, of the cache name alone.
 */
final class ClusterTaskSerialization implements SerializationContextInitializer {
    private static final String PACKAGE = "dev.varve.infinispan";
    private static final String FILE = "varve-tasks.proto";
    private static final String SCHEMA = """
            syntax = "proto2";
            package dev.varve.infinispan;
            message Declare { optional string cacheName = 1; optional string label = 2; }
            message ReadAsOf { optional string cacheName = 1; optional string label = 2; }
            message Known { optional string cacheName = 1; optional string label = 2; }
            message Resolve { optional string cacheName = 1; }
            """;

    @Override
    @SuppressWarnings("deprecation") // still what SerializationContextInitializer asks for in ProtoStream 5
    public String getProtoFileName() {
        return FILE;
    }

    @Override
    @SuppressWarnings("deprecation")
    public String getProtoFile() {
        return SCHEMA;
    }

    @Override
    public void registerSchema(SerializationContext ctx) {
        ctx.registerProtoFiles(FileDescriptorSource.fromString(FILE, SCHEMA));
    }

    @Override
    public void registerMarshallers(SerializationContext ctx) {
        ctx.registerMarshaller(new Task<>(HistoryTasks.Declare.class, "Declare", HistoryTasks.Declare::new, HistoryTasks.Declare::cacheName,
                HistoryTasks.Declare::label));
        ctx.registerMarshaller(new Task<>(HistoryTasks.ReadAsOf.class, "ReadAsOf", HistoryTasks.ReadAsOf::new, HistoryTasks.ReadAsOf::cacheName,
                HistoryTasks.ReadAsOf::label));
        ctx.registerMarshaller(new Task<>(HistoryTasks.Known.class, "Known", HistoryTasks.Known::new, HistoryTasks.Known::cacheName,
                HistoryTasks.Known::label));
        ctx.registerMarshaller(new Task<>(ClusterRecovery.Resolve.class, "Resolve", (cacheName, none) -> new ClusterRecovery.Resolve(cacheName),
                ClusterRecovery.Resolve::cacheName, null));
    }

    /** A task message: cache name and, unless {@code label} is null, label. */
    private record Task<T>(Class<T> type, String name, BiFunction<String, String, T> create, java.util.function.Function<T, String> cacheName,
                           java.util.function.Function<T, String> label) implements MessageMarshaller<T> {
        @Override
        public T readFrom(ProtoStreamReader reader) throws IOException {
            return create.apply(reader.readString("cacheName"), label == null ? null : reader.readString("label"));
        }

        @Override
        public void writeTo(ProtoStreamWriter writer, T task) throws IOException {
            writer.writeString("cacheName", cacheName.apply(task));
            if (label != null) writer.writeString("label", label.apply(task));
        }

        @Override
        public Class<? extends T> getJavaClass() {
            return type;
        }

        @Override
        public String getTypeName() {
            return PACKAGE + "." + name;
        }
    }
}
