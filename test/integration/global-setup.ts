// Before any integration test: what a killed run left in the rig that later tests would meet.
import { forgetLeftoverRegistries } from './helpers/registry.js';

export default async function globalSetup(): Promise<void> {
  for (const host of await forgetLeftoverRegistries()) console.log(`removed the leftovers of test registry ${host}`);
}
