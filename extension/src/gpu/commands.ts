/** Command ids of the GPU feature, shared by the palette, the launcher and buttons. */

export namespace CommandIds {
  export const openMonitor = 'gpudojo:open-gpu-monitor';
  export const refreshGpus = 'gpudojo:refresh-gpus';
}
