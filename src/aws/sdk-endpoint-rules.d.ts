// The endpoint rule sets the SDK clients ship, imported alone by src/aws/endpoints.ts (the clients' packages
// declare types only for their index). Each module is the client's own dist-es/endpoint file.
declare module '@aws-sdk/client-sqs/dist-es/endpoint/bdd.js' {
  export const bdd: import('@smithy/core/endpoints').BinaryDecisionDiagram;
}
declare module '@aws-sdk/client-sqs/dist-es/endpoint/EndpointParameters.js' {
  export const commonParams: import('@smithy/core/endpoints').EndpointParameterInstructions;
}
declare module '@aws-sdk/client-lambda/dist-es/endpoint/bdd.js' {
  export const bdd: import('@smithy/core/endpoints').BinaryDecisionDiagram;
}
declare module '@aws-sdk/client-lambda/dist-es/endpoint/EndpointParameters.js' {
  export const commonParams: import('@smithy/core/endpoints').EndpointParameterInstructions;
}
declare module '@aws-sdk/client-cloudwatch/dist-es/endpoint/bdd.js' {
  export const bdd: import('@smithy/core/endpoints').BinaryDecisionDiagram;
}
declare module '@aws-sdk/client-cloudwatch/dist-es/endpoint/EndpointParameters.js' {
  export const commonParams: import('@smithy/core/endpoints').EndpointParameterInstructions;
}
declare module '@aws-sdk/client-dynamodb/dist-es/endpoint/bdd.js' {
  export const bdd: import('@smithy/core/endpoints').BinaryDecisionDiagram;
}
declare module '@aws-sdk/client-dynamodb/dist-es/endpoint/EndpointParameters.js' {
  export const commonParams: import('@smithy/core/endpoints').EndpointParameterInstructions;
}
