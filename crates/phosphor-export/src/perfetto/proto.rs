//! Field numbers and enum values of `perfetto_trace.proto`, the parts the exporter writes. Taken
//! from the official schema (`perfetto.protos`, as the PyPI package `perfetto` ships it); the tests
//! decode every output with the code generated from that schema and reject unknown fields, so a
//! wrong number here fails them.

// perfetto.protos.Trace
pub const TRACE_PACKET: u32 = 1;

// TracePacket
pub const PACKET_TIMESTAMP: u32 = 8;
pub const PACKET_TIMESTAMP_CLOCK_ID: u32 = 58;
pub const PACKET_CLOCK_SNAPSHOT: u32 = 6;
pub const PACKET_TRUSTED_SEQUENCE_ID: u32 = 10;
pub const PACKET_TRACK_EVENT: u32 = 11;
pub const PACKET_INTERNED_DATA: u32 = 12;
pub const PACKET_SEQUENCE_FLAGS: u32 = 13;
pub const PACKET_DEFAULTS: u32 = 59;
pub const PACKET_TRACK_DESCRIPTOR: u32 = 60;
pub const PACKET_PERF_SAMPLE: u32 = 66;

// TracePacket.SequenceFlags
pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
pub const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;

// TracePacketDefaults (its `TrackEventDefaults.track_uuid` is 11, as `TrackEvent.track_uuid`)
pub const DEFAULTS_TIMESTAMP_CLOCK_ID: u32 = 58;
pub const DEFAULTS_TRACK_EVENT: u32 = 11;

// ClockSnapshot, ClockSnapshot.Clock, BuiltinClock
pub const SNAPSHOT_CLOCKS: u32 = 1;
pub const SNAPSHOT_PRIMARY_TRACE_CLOCK: u32 = 2;
pub const CLOCK_ID: u32 = 1;
pub const CLOCK_TIMESTAMP: u32 = 2;
pub const CLOCK_IS_INCREMENTAL: u32 = 3;
pub const BUILTIN_CLOCK_REALTIME: u64 = 1;
pub const BUILTIN_CLOCK_MONOTONIC: u64 = 3;

// TrackDescriptor, ProcessDescriptor, ThreadDescriptor, CounterDescriptor
pub const TRACK_UUID: u32 = 1;
pub const TRACK_NAME: u32 = 2;
pub const TRACK_PROCESS: u32 = 3;
pub const TRACK_THREAD: u32 = 4;
pub const TRACK_PARENT_UUID: u32 = 5;
pub const TRACK_COUNTER: u32 = 8;
pub const PROCESS_PID: u32 = 1;
pub const PROCESS_NAME: u32 = 6;
pub const THREAD_PID: u32 = 1;
pub const THREAD_TID: u32 = 2;
pub const THREAD_NAME: u32 = 5;
pub const COUNTER_CATEGORIES: u32 = 2;

// TrackEvent, TrackEvent.Type
pub const EVENT_CATEGORY_IIDS: u32 = 3;
pub const EVENT_DEBUG_ANNOTATIONS: u32 = 4;
pub const EVENT_TYPE: u32 = 9;
pub const EVENT_NAME_IID: u32 = 10;
pub const EVENT_NAME: u32 = 23;
pub const EVENT_TRACK_UUID: u32 = 11;
pub const EVENT_COUNTER_VALUE: u32 = 30;
pub const EVENT_DOUBLE_COUNTER_VALUE: u32 = 44;
/// `repeated fixed64 flow_ids = 47`: events with the same flow id are linked, in time order.
pub const EVENT_FLOW_IDS: u32 = 47;
pub const EVENT_TERMINATING_FLOW_IDS: u32 = 48;
pub const TYPE_SLICE_BEGIN: u64 = 1;
pub const TYPE_SLICE_END: u64 = 2;
pub const TYPE_INSTANT: u64 = 3;
pub const TYPE_COUNTER: u64 = 4;

// InternedData, EventCategory, EventName, DebugAnnotationName
pub const INTERNED_EVENT_CATEGORIES: u32 = 1;
pub const INTERNED_EVENT_NAMES: u32 = 2;
pub const INTERNED_DEBUG_ANNOTATION_NAMES: u32 = 3;
/// `iid` and `name` of `EventName`, `EventCategory` and `DebugAnnotationName`.
pub const INTERNED_IID: u32 = 1;
pub const INTERNED_NAME: u32 = 2;

// DebugAnnotation
pub const ANNOTATION_NAME_IID: u32 = 1;
pub const ANNOTATION_BOOL: u32 = 2;
pub const ANNOTATION_UINT: u32 = 3;
pub const ANNOTATION_INT: u32 = 4;
pub const ANNOTATION_DOUBLE: u32 = 5;
pub const ANNOTATION_STRING: u32 = 6;
pub const ANNOTATION_POINTER: u32 = 7;

// PerfSample
pub const PERF_SAMPLE_CPU: u32 = 1;
pub const PERF_SAMPLE_PID: u32 = 2;
pub const PERF_SAMPLE_TID: u32 = 3;
pub const PERF_SAMPLE_CALLSTACK_IID: u32 = 4;

// InternedData's profiling tables; InternedString, Mapping, Frame, Callstack
pub const INTERNED_FUNCTION_NAMES: u32 = 5;
pub const INTERNED_FRAMES: u32 = 6;
pub const INTERNED_CALLSTACKS: u32 = 7;
pub const INTERNED_BUILD_IDS: u32 = 16;
pub const INTERNED_MAPPING_PATHS: u32 = 17;
pub const INTERNED_MAPPINGS: u32 = 19;
pub const INTERNED_STRING_STR: u32 = 2;
pub const MAPPING_IID: u32 = 1;
pub const MAPPING_BUILD_ID: u32 = 2;
pub const MAPPING_START_OFFSET: u32 = 3;
pub const MAPPING_START: u32 = 4;
pub const MAPPING_END: u32 = 5;
pub const MAPPING_PATH_STRING_IDS: u32 = 7;
pub const FRAME_IID: u32 = 1;
pub const FRAME_FUNCTION_NAME_ID: u32 = 2;
pub const FRAME_MAPPING_ID: u32 = 3;
pub const FRAME_REL_PC: u32 = 4;
pub const CALLSTACK_IID: u32 = 1;
pub const CALLSTACK_FRAME_IDS: u32 = 2;
